"""Map lengths measured on normalised text back to offsets in the raw text.

Only used when a loop has been found, so a short Python scan is affordable here.
"""

import re

from app.degeneration.charclass import DELETED_CHARS, EXACT_TABLE, shape_view
from app.degeneration.config import LoopKind, LoopVerdict
from app.degeneration.periodic_loops import PeriodicLoop

_DELETED = frozenset(DELETED_CHARS)
_BLOCK = 256
_UNIT_EXCERPT_CHARS = 200
# A line break, escaped or not, with any blank lines after it counts once.
_LINE_BREAK_RE = re.compile(r"(?:\n|\\n)(?:\s|\\n)*")


def raw_start_of_kept(raw: str, kept: int, shape: bool = False) -> int:
    """Index in `raw` where its last `kept` normalised characters start.

    Scans backwards block by block (C-level translate per block) and then character by
    character inside the last block. With `shape`, `kept` counts shape-view characters (a
    run of digits is one). Returns 0 when `raw` holds fewer kept characters.
    """
    remaining = kept
    end = len(raw)
    while remaining > 0 and end > 0:
        start = max(0, end - _BLOCK)
        in_block = raw[start:end].translate(EXACT_TABLE)
        size = len(shape_view(in_block)) if shape else len(in_block)
        if size < remaining:
            remaining -= size
            end = start
            continue
        after_number = False
        for index in range(end - 1, start - 1, -1):
            char = raw[index]
            if char in _DELETED:
                continue
            number = shape and shape_view(char) == "0"
            if not (number and after_number):
                remaining -= 1
            after_number = number
            if remaining == 0:
                while number and index > 0 and shape_view(raw[index - 1]) == "0":
                    index -= 1  # the whole number belongs to the loop
                return index
    return 0


def raw_unit_newlines(covered: str, repeats: float) -> int:
    """Line breaks per copy of the unit in a raw loop region (escaped `\\n` counts too)."""
    if repeats <= 0:
        return 0
    return round(len(_LINE_BREAK_RE.findall(covered)) / repeats)


def periodic_verdict(raw: str, raw_base: int, loop: PeriodicLoop) -> LoopVerdict:
    """Verdict for a loop that ends at the end of `raw` (a raw tail starting at `raw_base`)."""
    onset = raw_start_of_kept(raw, loop.run, shape=loop.drift)
    unit_start = raw_start_of_kept(raw, loop.period, shape=loop.drift)
    kept_end = len(raw.rstrip(DELETED_CHARS))
    repeats = loop.run / loop.period
    covered = len(raw) - onset
    kind: LoopKind = "char_run" if loop.period == 1 else "phrase"
    newlines = raw_unit_newlines(raw[onset:], repeats)
    if loop.period > 1 and newlines:
        kind = "line" if newlines == 1 else "block"
    return LoopVerdict(
        kind=kind,
        period=max(1, round(covered / repeats)),
        repeats=round(repeats, 2),
        onset=raw_base + onset,
        covered=covered,
        unit=raw[unit_start:kept_end][:_UNIT_EXCERPT_CHARS],
        drift=loop.drift,
    )
