"""How far healthy pages go in each unit shape the detector counts (issue 39's evidence).

For one page, the largest instance of every shape the loop detector judges:

- periodic units of the normalised text (whitespace removed, lower-cased: the detector's
  exact view), by the class the detector gives the unit (letters, symbols, numeric, fill,
  markup; units with a table bar `|` apart): the most characters one tandem repeat covers and
  its copies. A period of 1 is a character run.
- lines: the most consecutive identical lines, the most consecutive lines equal once digits
  are masked (a counter or a re-emitted row), the most lines among the last 12 with letters
  that repeat one of the 16 before (the line rule's window), stacked rule lines, and the
  longest run of single-number lines counting by a fixed step;
- tables: the widest row, the most copies of one non-empty cell in a row, the longest run of
  empty cells, the longest separator row, the most consecutive identical (and digit-masked
  identical) rows;
- raw whitespace: the longest blank run.

The measures are the detector's units, counted here independently of its thresholds, so a
threshold can be set beyond what healthy pages reach, with a margin.
"""

import re
from collections import Counter
from typing import Any

import numpy as np

from app.degeneration.charclass import classify_unit, exact_view, has_cell_bar
from bench.healthy_corpus.tagging import table_rows

MAX_PERIOD = 1024
RUNS_PER_PERIOD = 8
_DIGITS = re.compile(r"\d+")
_LETTER = re.compile(r"[^\W\d_]")
_RULE_LINE = re.compile(r"^\s*([-=*_~─━═#])\1{2,}\s*$")
_NUMBER_LINE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*$")
_BLANK = re.compile(r"\s+")
_SEPARATOR_ROW = re.compile(r"^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*\|?\s*$", re.MULTILINE)


def periodic_extremes(text: str) -> dict[str, dict[str, float]]:
    """Per unit class: the most normalised characters one tandem repeat covers, and the most
    copies, over periods 1..MAX_PERIOD (at least two full copies; three for one character)."""
    exact = exact_view(text)
    best: dict[str, dict[str, float]] = {}
    if len(exact) < 2:
        return best
    codes = np.frombuffer(exact.encode("utf-32-le"), dtype=np.uint32)
    for period in range(1, min(MAX_PERIOD, len(exact) // 2) + 1):
        equal = (codes[:-period] == codes[period:]).astype(np.int8)
        edges = np.diff(np.concatenate(([0], equal, [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        lengths = ends - starts
        keep = lengths >= max(period, 2)
        if not keep.any():
            continue
        starts, lengths = starts[keep], lengths[keep]
        for index in np.argsort(lengths)[::-1][:RUNS_PER_PERIOD]:
            start, length = int(starts[index]), int(lengths[index])
            unit = exact[start : start + period]
            name = "table" if has_cell_bar(unit) else classify_unit(unit).value
            covered = length + period
            row = best.setdefault(name, {"covered": 0, "copies": 0.0, "period_at_max": 0})
            if covered > row["covered"]:
                row["covered"], row["period_at_max"] = covered, period
            row["copies"] = max(row["copies"], round(covered / period, 2))
    return best


def line_extremes(text: str) -> dict[str, int]:
    lines = [line.strip() for line in text.splitlines()]
    filled = [line for line in lines if line]
    return {
        "identical_lines_in_a_row": _longest_equal_run(filled),
        "digit_masked_lines_in_a_row": _longest_equal_run(
            [_DIGITS.sub("0", line) for line in filled if _LETTER.search(line)]
        ),
        "line_window_repeats": _window_repeats([line for line in filled if _LETTER.search(line)]),
        "rule_lines_stacked": _longest_true_run([bool(_RULE_LINE.match(line)) for line in filled]),
        "counter_steps": _counter_steps(filled),
    }


def table_extremes(text: str) -> dict[str, int]:
    rows = table_rows(text)
    if not rows:
        return {}
    return {
        "widest_row_cells": max(len(row) for row in rows),
        "one_cell_copies_in_a_row": max(_most_common_cell(row) for row in rows),
        "empty_cells_in_a_row": max(_longest_true_run([not cell for cell in row]) for row in rows),
        "separator_row_chars": max((len(m) for m in _SEPARATOR_ROW.findall(text)), default=0),
        "identical_rows_in_a_row": _longest_equal_run(["|".join(row) for row in rows]),
        "digit_masked_rows_in_a_row": _longest_equal_run(
            [_DIGITS.sub("0", "|".join(row)) for row in rows]
        ),
    }


def page_shapes(text: str) -> dict[str, Any]:
    """Every shape measure of one page (see the module's docstring)."""
    blank = max((len(m) for m in _BLANK.findall(text)), default=0)
    return {
        "periodic": periodic_extremes(text),
        "lines": line_extremes(text),
        "tables": table_extremes(text),
        "blank_run": blank,
    }


def _longest_equal_run(items: list[str]) -> int:
    best = run = 0
    previous = None
    for item in items:
        run = run + 1 if item == previous else 1
        previous = item
        best = max(best, run)
    return best


def _longest_true_run(flags: list[bool]) -> int:
    best = run = 0
    for flag in flags:
        run = run + 1 if flag else 0
        best = max(best, run)
    return best


def _window_repeats(lines: list[str], window: int = 12, history: int = 16) -> int:
    repeats = [line in lines[max(0, i - history) : i] for i, line in enumerate(lines)]
    return max((sum(repeats[max(0, i - window + 1) : i + 1]) for i in range(len(lines))), default=0)


def _counter_steps(lines: list[str]) -> int:
    best = run = 0
    previous: float | None = None
    step: float | None = None
    for line in lines:
        match = _NUMBER_LINE.match(line)
        if match is None:
            run, previous, step = 0, None, None
            continue
        value = float(match.group(1))
        if previous is not None and step is not None and value - previous == step and step:
            run += 1
        else:
            step = None if previous is None else value - previous
            run = 1 if previous is not None else 0
        previous = value
        best = max(best, run)
    return best


def _most_common_cell(row: list[str]) -> int:
    counts = Counter(cell for cell in row if cell and not set(cell) <= set("-: "))
    return max(counts.values(), default=0)
