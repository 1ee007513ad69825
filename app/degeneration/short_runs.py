"""Short numeric runs on one line, judged on the raw text: `0000`, `1 1 1 1`, `-3 -3 -3`.

In the exact view (whitespace removed) these read as runs of digits, which the periodic
search holds to `numeric_min_covered` (256 characters): a sparse matrix or a column of ones
read row by row is a run of digits too once its spaces and line breaks are gone. On the raw
text they differ: healthy numbers repeat across line breaks, table bars or wider cells
(`0.00 0.00`), while a model stuck on one token repeats a unit of a few characters, spaces
included, dozens of times on one line. So a raw unit of at most `short_run_max_period`
characters, numeric, with no table bar, repeated `short_run_min_repeats` times over
`short_run_min_chars` characters without a line break, is a loop.
"""

import re
from functools import lru_cache
from math import lcm

from app.degeneration.charclass import EXACT_TABLE, UnitClass, classify_unit
from app.degeneration.config import DetectorConfig, LoopVerdict
from app.degeneration.periodicity import is_periodic, periodic_run

_UNIT_EXCERPT_CHARS = 200
_DIGIT_RE = re.compile(r"\d")


@lru_cache(maxsize=8)
def _common_period(max_period: int) -> int:
    return lcm(*range(1, max_period + 1))


def may_end_in_short_run(exact: str, config: DetectorConfig) -> bool:
    """Cheap pre-test on the exact view: a tail with any period up to `short_run_max_period`
    has their common multiple as a period too, so one slice comparison rules most tails out."""
    period = _common_period(config.short_run_max_period)
    end = len(exact)
    if not is_periodic(exact, end, period, 3 * period):
        return False
    return _DIGIT_RE.search(exact, end - config.short_run_max_period) is not None  # not rules


def find_short_run(raw: str, raw_base: int, config: DetectorConfig) -> LoopVerdict | None:
    """A short numeric unit repeated on the last line of `raw` (starting at `raw_base`)."""
    need = config.short_run_min_chars
    end = len(raw)
    if end < need:
        return None
    tail = raw[end - need :]
    if "\n" in tail or "|" in tail:
        return None  # numbers across lines or table cells: left to the numeric threshold
    for period in range(1, config.short_run_max_period + 1):
        if not is_periodic(raw, end, period, need):
            continue
        unit = raw[end - period :]
        exact = unit.translate(EXACT_TABLE)
        if not exact or classify_unit(exact) is not UnitClass.NUMERIC:
            return None
        least = max(need, period * config.short_run_min_repeats)
        if not is_periodic(raw, end, period, least):
            return None
        run = periodic_run(raw, end, period, known=least)
        return LoopVerdict(
            kind="char_run" if len(exact) == 1 else "phrase",
            period=period,
            repeats=round(run / period, 2),
            onset=raw_base + end - run,
            covered=run,
            unit=unit[:_UNIT_EXCERPT_CHARS],
        )
    return None
