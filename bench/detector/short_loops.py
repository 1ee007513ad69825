"""Where the online detector stops the tax bench's loop shapes (`bench.scripted_loops`).

The same scripts the scripted vLLM server replays in `python -m bench tax` (healthy page
openings, then character runs, two-character units, words, lines, rows, blocks and the dev
corpus' real degenerate tails continued), fed in 16-character chunks to two detector versions
side by side: characters streamed when each fired, and how far past the loop's start (the
verdict's onset) that was, in characters and in periods of the shape.
"""

from types import ModuleType
from typing import Any

from rich.table import Table

from bench.detector.shapes import first_verdict
from bench.ocr.text import degenerate_tails, healthy_pages
from bench.scripted_loops import LoopShape, build_shapes

# Long enough for any shape's stop; the tax bench's cap is 512 tokens (about 1,500 characters).
SHAPE_CHARS = 8_000


def evaluate_short_loops(package: ModuleType, baseline: ModuleType | None) -> list[dict[str, Any]]:
    """One row per scripted shape: where each version stops it."""
    shapes = build_shapes(healthy_pages(), degenerate_tails(), min_chars=SHAPE_CHARS)
    rows = []
    for shape in shapes:
        row: dict[str, Any] = {
            "shape": shape.name,
            "source": shape.source,
            "period_chars": shape.period_chars,
            "new": _stop(package, shape),
        }
        if baseline is not None:
            row["before"] = _stop(baseline, shape)
        rows.append(row)
    return rows


def _stop(package: ModuleType, shape: LoopShape) -> dict[str, Any]:
    fired = first_verdict(package, shape.text)
    if fired is None:
        return {"at": None}
    at, verdict = fired
    after_onset = at - verdict.onset
    return {
        "at": at,
        "after_onset": after_onset,
        "periods": round(after_onset / max(1, shape.period_chars), 2),
    }


def short_loop_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="Tax-bench loop shapes: characters streamed when the detector fired")
    columns = ["shape (source)", "period", "at (chars)", "past onset", "periods"]
    has_before = any("before" in row for row in rows)
    if has_before:
        columns += ["before: at", "before: past onset"]
    for column in columns:
        table.add_column(column, justify="left" if column.startswith("shape") else "right")
    for row in rows:
        new = row["new"]
        cells = [
            f"{row['shape']} ({row['source'].removeprefix('dev:')[:28]})",
            str(row["period_chars"]),
            _cell(new.get("at")),
            _cell(new.get("after_onset")),
            _cell(new.get("periods")),
        ]
        if has_before:
            old = row.get("before", {})
            cells += [_cell(old.get("at")), _cell(old.get("after_onset"))]
        table.add_row(*cells)
    return table


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)
