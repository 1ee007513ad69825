"""`python -m bench false-alarms --bound`: the confirming attempt's bound, chosen from numbers.

A confirming attempt lets the unit its retry was cut on run to `multiple` times the copies the
cut held (app/engines/vlm_confirm.py). Too small a multiple, and a healthy page whose
repetition trips the detector loses its answer; too large, and a sticky loop costs more. Both
sides, for several multiples, on real text (no server, characters stand for tokens):

- **healthy**: every page of the healthy corpus (`bench.healthy_corpus`, 3,690 pages, 7
  sources) and the dev corpora's healthy rows that the detector stops (a false alarm): the page
  cut where the detector stops it, then read whole under the confirming attempt's stop and
  judge. Kept: the page keeps the model's answer.
- **loops**: the dev corpora's real loops and the healthy corpus' pages found to loop, each
  continued to 16,000 characters past its onset by its own unit (`bench.detector.continued`):
  cut at the first verdict (`c1` characters), then read by the confirming attempt (`c2`, or the
  whole 16,000 where it is never cut). A sticky page costs `2 c1 + c2` (the first read, the
  retry, the confirming attempt); a loop that does not come back costs `c1 + H`, the cut
  and a healthy read of the page, `H` at least the text before the loop plus one copy
  (`worst`: the loop at the page's end) and typically the healthy corpus' median page
  (`typical`, where that is longer).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.table import Table

import app.degeneration
from app.degeneration import DetectorConfig, LoopDetector
from app.domain import ConfirmedUnit
from app.engines.vlm_confirm import Tolerance, TolerantDetector, judge_confirming
from bench.detector.continued import continue_loop
from bench.detector.corpus import page_config
from bench.detector.heldout import Sample, load_samples
from bench.healthy_corpus.corpus import load_loops, load_pages

MULTIPLES = (2, 3, 4, 6, 8)
UNBOUNDED = 10**6  # the unit tolerated however often: what the judge alone refuses
CHUNK = 16
SHARED = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def _chunks(text: str) -> Iterator[str]:
    return (text[i : i + CHUNK] for i in range(0, len(text), CHUNK))


def first_cut(text: str, config: DetectorConfig | None) -> ConfirmedUnit | None:
    """Where the detector stops `text`, as the stop records it."""
    detector = LoopDetector(config)
    for piece in _chunks(text):
        if (verdict := detector.feed(piece)) is not None:
            cut = text[: detector.text_length]
            unit = cut[verdict.onset : verdict.onset + verdict.period]
            return ConfirmedUnit(verdict.kind, unit, cut, verdict.onset)
    return None


def confirmed_at(text: str, tolerance: Tolerance, config: DetectorConfig | None) -> int | None:
    """Characters the confirming attempt's stream reads before it cuts `text` (None: never)."""
    detector = TolerantDetector(lambda: LoopDetector(config), tolerance)
    read = 0
    for piece in _chunks(text):
        read += len(piece)
        if detector.feed(piece) is not None:
            return read
    return read if detector.finish() is not None else None


def keeps_answer(page: str, cut: ConfirmedUnit, multiple: int, config: DetectorConfig) -> bool:
    tolerance = Tolerance.of(cut, multiple)
    if tolerance is None or confirmed_at(page, tolerance, config) is not None:
        return False
    return judge_confirming(page, tolerance, "stop", None, 10**9, config).verdict is None


def healthy_side(pages: list[tuple[str, str, DetectorConfig]]) -> dict[str, Any]:
    stopped = [(i, t, c, cut) for i, t, c in pages if (cut := first_cut(t, c)) is not None]
    kept: dict[str, list[str]] = {}
    for multiple in (*MULTIPLES, UNBOUNDED):
        name = "unbounded" if multiple == UNBOUNDED else str(multiple)
        kept[name] = [i for i, t, c, cut in stopped if keeps_answer(t, cut, multiple, c)]
    return {
        "pages": len(pages),
        "false_alarms": len(stopped),
        "stopped": [{"id": i, "kind": cut.kind} for i, _, _, cut in stopped],  # no corpus text
        "kept": {name: len(ids) for name, ids in kept.items()},
        "lost": {name: sorted({i for i, *_ in stopped} - set(ids)) for name, ids in kept.items()},
    }


def loop_side(samples: list[Sample], typical_page: int) -> dict[str, Any]:
    rows = []
    for sample in samples:
        loop = continue_loop(sample)
        cut = first_cut(loop.text, None)
        if cut is None:
            continue
        c1, floor = len(cut.cut_text), loop.onset + loop.period
        row: dict[str, Any] = {"id": sample.id, "c1": c1, "full_cap": len(loop.text)}
        for multiple in MULTIPLES:
            tolerance = Tolerance.of(cut, multiple)
            c2 = confirmed_at(loop.text, tolerance, None) if tolerance else c1
            read = c2 if c2 is not None else len(loop.text)
            row[str(multiple)] = {
                "c2": read,
                "cut": c2 is not None,
                "worst": (2 * c1 + read) / (c1 + floor),
                "typical": (2 * c1 + read) / (c1 + max(floor, typical_page)),
            }
        row["full_cap_typical"] = (2 * c1 + len(loop.text)) / (c1 + max(floor, typical_page))
        rows.append(row)
    return {"loops": len(rows), "by_multiple": _summary(rows), "rows": rows}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for multiple in MULTIPLES:
        arm = [r[str(multiple)] for r in rows]
        past = [a["c2"] - r["c1"] for a, r in zip(arm, rows, strict=True)]
        out[str(multiple)] = {
            "cut_before_cap": sum(a["cut"] for a in arm),
            "chars_past_first_cut_median": statistics.median(past),
            "chars_past_first_cut_p90": _p90(past),
            "sticky_over_gone_typical_median": round(
                statistics.median(a["typical"] for a in arm), 2
            ),
            "sticky_over_gone_typical_p90": round(_p90([a["typical"] for a in arm]), 2),
            "within_2x_typical": sum(a["typical"] <= 2 for a in arm),
            "sticky_over_gone_worst_p90": round(_p90([a["worst"] for a in arm]), 2),
            "within_2x_worst": sum(a["worst"] <= 2 for a in arm),
        }
    out["full_cap"] = {
        "sticky_over_gone_typical_median": round(
            statistics.median(r["full_cap_typical"] for r in rows), 2
        ),
        "within_2x_typical": sum(r["full_cap_typical"] <= 2 for r in rows),
    }
    return out


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))] if ordered else 0.0


def run_bound() -> dict[str, Any]:
    corpus = load_pages()
    dev = load_samples(SHARED) if SHARED.is_dir() else []
    pages = [(p["id"], p["text"], page_config(app.degeneration, p, {})) for p in corpus]
    pages += [(s.id, s.text, DetectorConfig()) for s in dev if s.label == "healthy"]
    loops = [s for s in dev if s.label == "degenerate"]
    loops += [
        Sample(p["id"], p["source"], "degenerate", False, "corpus loop", p["text"])
        for p in load_loops()
    ]
    typical = int(statistics.median(len(p["text"]) for p in corpus))
    return {
        "multiples": list(MULTIPLES),
        "typical_page_chars": typical,
        "healthy": healthy_side(pages),
        "loops": loop_side(loops, typical),
    }


def bound_table(report: dict[str, Any]) -> Table:
    healthy, loops = report["healthy"], report["loops"]
    table = Table(
        title=f"The confirming attempt's bound: {healthy['false_alarms']} false alarms on "
        f"{healthy['pages']:,} healthy pages, {loops['loops']} real loops continued"
    )
    for column in (
        "multiple",
        "false alarms keep answer",
        "loops cut before cap",
        "chars past 1st cut p50 / p90",
        "sticky/gone typical p50 / p90",
        "within 2x typical / worst",
    ):
        table.add_column(column, justify="right")
    for name, row in loops["by_multiple"].items():
        if name == "full_cap":
            continue
        table.add_row(
            f"{name}x",
            f"{healthy['kept'][name]}/{healthy['false_alarms']}",
            f"{row['cut_before_cap']}/{loops['loops']}",
            f"{row['chars_past_first_cut_median']:,.0f} / {row['chars_past_first_cut_p90']:,.0f}",
            f"{row['sticky_over_gone_typical_median']} / {row['sticky_over_gone_typical_p90']}",
            f"{row['within_2x_typical']} / {row['within_2x_worst']}",
        )
    full = loops["by_multiple"]["full_cap"]
    table.add_row(
        "full cap (before)",
        f"{healthy['false_alarms']}/{healthy['false_alarms']}",  # any answer that ended
        f"0/{loops['loops']}",
        "-",
        f"{full['sticky_over_gone_typical_median']} / -",
        f"{full['within_2x_typical']} / -",
    )
    return table
