"""The detector on the real healthy corpus (issue 39): false alarms per 1,000 pages, held out.

Pages come from `bench.healthy_corpus` (3,097 page-sized outputs of OCR models and converters,
six public repositories, origin and licence per page). A page in JSON is judged as a JSON
profile's answer would be (`json_strings`); the others with the defaults.

Three thresholds are derived from this corpus (`EXTENTS`): how far healthy pages go in that
shape (the most identical text cells in one table row, the most identical lone-mark lines
stacked, the most lines in a row that differ only in their numbers), times `MARGIN`, rounded
up to a power of two. Leave-one-source-out: for each source, those thresholds are derived
from the *other* sources only, and that source's pages are judged with them; the false-alarm
rate is pooled over the held-out sources. The other thresholds were not read off this corpus.
"""

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import replace
from types import ModuleType
from typing import Any

from bench.detector.mixed_text import chunks

MARGIN = 1.5
_LETTER = re.compile(r"[^\W\d_]")
_DIGITS = re.compile(r"\d+")
_LEADERS = frozenset(".,·…‥⋯_")  # as `app.degeneration.lines`: leader dots are fill


def _identical_text_cells(text: str) -> int:
    """The most identical consecutive cells with letters in one Markdown table row."""
    best = 0
    for line in text.split("\n"):
        row = line.strip()
        if not row.startswith("|") or row.count("|") < 3:
            continue
        cells = [cell.strip().lower() for cell in row.strip("|").split("|")]
        run = 1
        for before, cell in itertools.pairwise(cells):
            run = run + 1 if cell == before and _LETTER.search(cell) else 1
            best = max(best, run)
    return best


def _stacked_lone_marks(text: str) -> int:
    """The most identical lines of one or two marks stacked (blank lines between allowed)."""
    best = run = 0
    previous = None
    for line in text.split("\n"):
        mark = line.strip()
        if not mark:
            continue
        if len(mark) <= 2 and not any(char.isalnum() for char in mark) and set(mark) - _LEADERS:
            run = run + 1 if mark == previous else 1
            best = max(best, run)
        else:
            run = 0
        previous = mark
    return best


def _counting_lines(text: str) -> int:
    """The most lines in a row that are identical but for their numbers (and differ)."""
    best = run = 0
    previous: tuple[str, str] | None = None
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped:
            continue
        key = _DIGITS.sub("0", stripped)
        counting = (
            previous is not None
            and key == previous[0]
            and stripped != previous[1]
            and _LETTER.search(key) is not None
        )
        run = run + 1 if counting else 1
        best = max(best, run)
        previous = (key, stripped)
    return best


# Config field -> the healthy extent it must stay beyond.
EXTENTS: dict[str, Callable[[str], int]] = {
    "row_cell_min_repeats": _identical_text_cells,
    "lone_mark_min_repeats": _stacked_lone_marks,
    "counter_min_copies": _counting_lines,
}


def derive(extent: int) -> int:
    """A threshold beyond a healthy extent: `MARGIN` times it, up to a power of two."""
    return 2 ** math.ceil(math.log2(max(2.0, MARGIN * extent + 1)))


def extents_by_source(pages: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per threshold and source: the healthy maximum and the page holding it."""
    table: dict[str, dict[str, dict[str, Any]]] = {field: {} for field in EXTENTS}
    for page in pages:
        for field, measure in EXTENTS.items():
            value = measure(page["text"])
            row = table[field].setdefault(page["source"], {"max": 0, "at": None})
            if value > row["max"]:
                row.update(max=value, at=page["origin"])
    return table


def page_config(package: ModuleType, page: dict[str, Any], overrides: dict[str, int]) -> Any:
    fields = package.DetectorConfig.__dataclass_fields__
    chosen = {k: v for k, v in overrides.items() if k in fields}
    if page["format"] == "json" and "json_strings" in fields:
        chosen["json_strings"] = 1
    return package.DetectorConfig(**chosen)


def stops(package: ModuleType, text: str, config: Any) -> Any:
    """The online verdict on `text` streamed in 16-character chunks (or at its end)."""
    detector = package.LoopDetector(config)
    for piece in chunks(text, 16):
        if detector.feed(piece) is not None:
            return detector.verdict
    return detector.finish()


def false_alarms(
    package: ModuleType,
    pages: list[dict[str, Any]],
    overrides: Callable[[str], dict[str, int]] | None = None,
    offline: bool = False,
) -> dict[str, Any]:
    """Pages flagged, per source and per 1,000 pages; `overrides(source)` gives thresholds."""
    flagged: list[dict[str, Any]] = []
    per_source: dict[str, list[int]] = {}
    for page in pages:
        config = page_config(package, page, overrides(page["source"]) if overrides else {})
        verdict = stops(package, page["text"], config)
        judged = verdict is not None
        if offline and not judged:
            judged = bool(package.score_output(page["text"]).degenerate)
        counts = per_source.setdefault(page["source"], [0, 0])
        counts[0] += 1
        counts[1] += judged
        if judged:
            flagged.append(
                {
                    "id": page["id"],
                    "source": page["source"],
                    "origin": page["origin"],
                    "format": page["format"],
                    "kind": None if verdict is None else verdict.kind,
                    "unit": "" if verdict is None else verdict.unit[:60],
                }
            )
    total = sum(n for n, _ in per_source.values())
    return {
        "pages": total,
        "flagged": len(flagged),
        "per_1000": round(1000 * len(flagged) / total, 2) if total else None,
        "per_source": {s: {"pages": n, "flagged": f} for s, (n, f) in sorted(per_source.items())},
        "flagged_pages": flagged,
    }


def held_out_thresholds(extents: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict]:
    """Per held-out source: each derived threshold from the other sources' maxima."""
    sources = sorted({s for rows in extents.values() for s in rows})
    return {
        held: {
            field: derive(max((r["max"] for s, r in rows.items() if s != held), default=0))
            for field, rows in extents.items()
        }
        for held in sources
    }


def evaluate_corpus_heldout(package: ModuleType, pages: list[dict[str, Any]]) -> dict[str, Any]:
    extents = extents_by_source(pages)
    thresholds = held_out_thresholds(extents)
    in_sample = {
        field: derive(max((r["max"] for r in rows.values()), default=0))
        for field, rows in extents.items()
    }
    return {
        "extents": extents,
        "derived_in_sample": in_sample,
        "derived_held_out": thresholds,
        "held_out": false_alarms(package, pages, lambda source: thresholds[source]),
    }


def implied_precision(recall: float | None, fpr: float | None, loop_rate: float = 0.0242) -> Any:
    """Share of verdicts that are real loops on a batch with `loop_rate` looping pages."""
    if recall is None or fpr is None or recall + fpr == 0:
        return None
    caught = recall * loop_rate
    return round(caught / (caught + fpr * (1 - loop_rate)), 4)


def with_fields(config: Any, **fields: int) -> Any:
    return replace(config, **fields)
