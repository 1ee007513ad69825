"""The documentation's pictures, each drawn from a committed run (`python -m docsgen pictures`,
or `make docs-pictures`), written as SVG under `docs/images/`:

- `batch-timeline.svg`: one batch of 40 pages on the vLLM CPU server, without loops (arm B),
  with 4 loops run to the cap (A), and with Folio's default stop and retry (F);
- `cost-split.svg`: the report's cost split (healthy and degenerate attempts) for those arms;
- `tax-arms.svg`: the degeneration-tax bench's arms, wall-clock and server tokens over B;
- `detector-shapes.svg`: the detector's per-shape table (`python -m bench detector`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docsgen import svg
from docsgen.bench_pictures import detector_shapes, tax_arms
from docsgen.runs import GPU_USD_PER_HOUR, RESULTS, Batch, committed_batches

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "docs" / "images"
BENCH = REPO / "bench" / "results"
WIDTH = 900
LEFT = 190
ARM_NAMES = {
    "B": "B: no loops (the floor)",
    "A": "A: 4 loops run to the cap",
    "F": "F: Folio stops and retries",
    "C": "C: client closes the stream",
    "C-plugin": "C-plugin: plugin in the engine",
}


def draw_all(images: Path = IMAGES) -> list[Path]:
    images.mkdir(parents=True, exist_ok=True)
    batches = committed_batches(("B", "A", "F", "C", "C-plugin"))
    drawn = {
        "batch-timeline.svg": batch_timeline([batches[a] for a in ("B", "A", "F")]),
        "cost-split.svg": cost_split([batches[a] for a in ("B", "A", "C", "C-plugin", "F")]),
        "tax-arms.svg": tax_arms(_results(RESULTS)),
    }
    detector = _results("detector")
    if detector is not None:  # made by `python -m bench detector` (reads ../shared)
        drawn["detector-shapes.svg"] = detector_shapes(detector)
    for name, picture in drawn.items():
        (images / name).write_text(picture, encoding="utf-8")
    return [images / name for name in drawn]


def _results(name: str) -> Any:
    path = BENCH / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def lanes(batch: Batch) -> list[list[Any]]:
    """Attempts packed into client lanes: each lane runs one request at a time."""
    packed: list[list[Any]] = []
    for attempt in sorted(batch.rows.attempts, key=lambda a: a.start):
        lane = next((lane for lane in packed if lane[-1].end <= attempt.start + 1e-3), None)
        if lane is None:
            packed.append([attempt])
        else:
            lane.append(attempt)
    return packed


def batch_timeline(batches: list[Batch]) -> str:
    origin = {b.arm: min(a.start for a in b.rows.attempts) for b in batches}
    walls = {b.arm: max(a.end for a in b.rows.attempts) - origin[b.arm] for b in batches}
    scale = (WIDTH - LEFT - 30) / max(walls.values())
    floor = walls[batches[0].arm]
    body, y = [svg.text(10, 22, "One batch of 40 pages, 16 in flight", size=15, weight="bold")], 40
    for batch in batches:
        packed = lanes(batch)
        inflation = walls[batch.arm] / floor - 1
        label = f"{walls[batch.arm]:.1f} s ({inflation:+.0%})" if batch is not batches[0] else ""
        body += [svg.text(10, y + 14, ARM_NAMES[batch.arm], weight="bold")]
        body += [svg.text(10, y + 30, label or f"{walls[batch.arm]:.1f} s", fill="#555")]
        for i, lane in enumerate(packed):
            for a in lane:
                colour = svg.LOOP if a.status == "degenerate" else svg.HEALTHY
                tip = f"page {a.page_id} {a.step_name} {a.status} {a.completion_tokens} tokens"
                x = LEFT + (a.start - origin[batch.arm]) * scale
                body.append(svg.rect(x, y + i * 6, (a.end - a.start) * scale - 1, 5, colour, tip))
        end = LEFT + walls[batch.arm] * scale
        body.append(svg.line(end, y - 4, end, y + len(packed) * 6 + 2, svg.INK, "3,2"))
        y += max(len(packed) * 6, 36) + 18
    body += _seconds_axis(y, max(walls.values()), scale)
    body += svg.legend(LEFT, y + 40, [("healthy attempt", svg.HEALTHY), ("loop", svg.LOOP)])
    body.append(svg.text(WIDTH - 10, y + 40, _source(batches[0]), "end", size=10, fill="#666"))
    return svg.document(WIDTH, y + 52, body, "batch timeline with and without loops")


def _seconds_axis(y: float, span: float, scale: float) -> list[str]:
    body = [svg.line(LEFT, y, LEFT + span * scale, y)]
    for t in range(0, int(span) + 1, 5):
        body += [svg.text(LEFT + t * scale, y + 15, f"{t} s", "middle", size=11)]
    return body


def _source(batch: Batch) -> str:
    return f"from {batch.source}"


def cost_split(batches: list[Batch]) -> str:
    reports = [(b, b.report().report) for b in batches]
    most = max(r.cost_per_1k_pages or 0.0 for _, r in reports)
    scale = (WIDTH - LEFT - 230) / most
    title = f"The report's cost split, per 1,000 pages (GPU at ${GPU_USD_PER_HOUR:.2f}/h)"
    body, y = [svg.text(10, 22, title, size=15, weight="bold")], 44
    for batch, r in reports:
        per_page = (r.cost_per_1k_pages or 0.0) / r.cost_usd if r.cost_usd else 0.0
        healthy = (r.cost_usd - r.cost_usd_degenerate) * per_page
        degenerate = r.cost_usd_degenerate * per_page
        body += [svg.text(10, y + 15, ARM_NAMES[batch.arm])]
        body += [svg.rect(LEFT, y, healthy * scale, 20, svg.HEALTHY, f"healthy ${healthy:.3f}")]
        body += [svg.rect(LEFT + healthy * scale, y, degenerate * scale, 20, svg.LOOP)]
        share = r.cost_usd_degenerate / r.cost_usd if r.cost_usd else 0.0
        note = f"${healthy + degenerate:.3f}, {share:.1%} on loops"
        body += [svg.text(LEFT + (healthy + degenerate) * scale + 8, y + 15, note)]
        y += 32
    body += svg.legend(LEFT, y + 14, [("healthy attempts", svg.HEALTHY), ("loops", svg.LOOP)])
    body.append(svg.text(WIDTH - 10, y + 14, _source(batches[0]), "end", size=10, fill="#666"))
    return svg.document(WIDTH, y + 26, body, "cost split by outcome")
