"""Find a loop that ends at the end of a normalised buffer.

Three searches, cheapest first: a run of one character, an exact periodic tail (candidate
periods from earlier occurrences of the last characters), and a tail that is periodic only in
the shape view, where every number reads as one `0` (drift: counters, timestamps, a table
re-emitted with other values). Each accepts a loop only when it covers
the length its unit class requires (`required_coverage`).
"""

import re
from dataclasses import dataclass

from app.degeneration.charclass import (
    UnitClass,
    classify_char,
    classify_unit,
    content_chars,
    count_letters,
    has_cell_bar,
)
from app.degeneration.config import DetectorConfig
from app.degeneration.periodicity import (
    candidate_periods,
    char_run_length,
    is_periodic,
    periodic_run,
)

_LETTER_RE = re.compile(r"[^\W\d_]")


@dataclass(frozen=True, slots=True)
class PeriodicLoop:
    """A loop in normalised characters: `run` characters ending at the buffer end."""

    period: int
    run: int
    unit_class: UnitClass
    drift: bool = False


def required_coverage(unit: str, config: DetectorConfig, drift: bool = False) -> int | None:
    """Normalised characters a loop of this unit must cover; None if it can never count."""
    period = len(unit)
    unit_class = classify_unit(unit)
    if period == 1:
        return _char_run_need(unit_class, config)
    # Copies that drift are checked half as often (`drift_check_stride`), so they confirm
    # with half the characters of a next copy: the latency bound stays the same.
    confirm = config.confirm_chars // 2 if drift else config.confirm_chars
    need = max(config.min_repeats * period + min(period, confirm), config.min_covered_chars)
    if drift:
        # Numbers, markup or rules that change are a table, not a loop; a unit with words
        # (a heading, row labels, a sentence) coming back with other numbers is.
        if count_letters(unit) < max(config.drift_min_letters, config.min_unit_letters):
            return None
        if unit.count("0") * config.drift_max_chars_per_number < content_chars(unit):
            return None
        # A short unit counting on is a list until it goes on far beyond a page's length.
        copies = max(config.drift_min_repeats, config.counter_min_copies)
        if period >= config.drift_long_block_chars or is_table_row(unit):
            copies = min(config.drift_min_repeats, config.min_repeats)
        need = max(need, copies * period)
        if is_table_row(unit):
            need = max(need, config.drift_row_repeats(count_letters(unit)) * period)
    elif (class_minimum := _class_min_covered(unit_class, config)) is not None:
        need = max(need, class_minimum)
    elif config.min_unit_letters and count_letters(unit) < config.min_unit_letters:
        return None
    if _cells_of_one_row(unit):
        # Cells within one row (merged cells, values that differ only in digits): `||` is
        # where one markdown row ends and the next begins (the unit is a rotation, so the
        # junction may straddle its two ends). Whole rows or sections that come back with
        # only their numbers changed are held to the drift rule above.
        need = max(need, config.row_cell_min_repeats * period)
    return min(need, config.tail_window)


# Cell tags of HTML and of DocTags' OTSL tables, and the tags that end their rows.
_CELL_TAGS = ("<td", "<th", "<ched>", "<fcel>", "<ecel>", "<rhed>", "<srow>", "<lcel>", "<ucel>")
_ROW_TAGS = ("<tr", "</tr", "<nl>")


def _cells_of_one_row(unit: str) -> bool:
    """Cells within one row: a Markdown bar with no row junction (`||`, the unit being a
    rotation may straddle it), or HTML or OTSL cells (`<td>`, `<ched>`) with no row tag."""
    doubled = unit + unit
    if any(tag in doubled for tag in _CELL_TAGS):
        return not any(tag in doubled for tag in _ROW_TAGS)
    return has_cell_bar(unit) and "||" not in unit + unit[0]


def is_table_row(unit: str) -> bool:
    """Whether an exact- or shape-view unit is one table row (Markdown or HTML)."""
    rotated = unit + unit[:1]
    return (rotated.count("||") == 1 and "\n" not in unit) or unit.count("<tr") == 1


def _class_min_covered(unit_class: UnitClass, config: DetectorConfig) -> int | None:
    """Coverage floor of the classes that repeat naturally (None for words and symbols)."""
    if unit_class is UnitClass.FILL:
        return config.fill_min_covered
    if unit_class is UnitClass.MARKUP:
        return config.markup_min_covered
    if unit_class is UnitClass.NUMERIC:
        return config.numeric_min_covered
    return None


def _char_run_need(unit_class: UnitClass, config: DetectorConfig) -> int:
    if unit_class is UnitClass.LETTERS:
        need = config.letter_run_min
    elif unit_class is UnitClass.SYMBOLS:
        need = config.char_run_min
    else:
        floor = _class_min_covered(unit_class, config)
        need = config.fill_min_covered if floor is None else floor
    return min(need, config.tail_window)


def find_char_run(buffer: str, config: DetectorConfig) -> PeriodicLoop | None:
    """A run of one repeated character at the end of `buffer`."""
    end = len(buffer)
    if end < 2 or buffer[-1] != buffer[-2]:
        return None
    last = buffer[-1]
    need = config.mrz_fill_run_min if last == "<" else _char_run_need(classify_char(last), config)
    # One look at the character `need` places back rejects almost every natural run.
    if need > end or buffer[end - need] != last:
        return None
    run = char_run_length(buffer, end, config.tail_window)
    if run < need:
        return None
    return PeriodicLoop(period=1, run=run, unit_class=classify_char(last))


def find_exact_loop(buffer: str, config: DetectorConfig) -> PeriodicLoop | None:
    """A tail of `buffer` that repeats exactly with some period in 2..max_period."""
    end = len(buffer)
    anchor = min(config.anchor_chars, max(2, end // 3))
    if end > anchor and buffer.count(buffer[-1], end - anchor) == anchor:
        return None  # the tail is one character repeated: `find_char_run` decides
    tested: list[int] = []
    for period in candidate_periods(buffer, end, anchor, config.max_period, config.max_candidates):
        if any(period % shorter == 0 for shorter in tested):
            continue  # a multiple of a period already judged is the same loop
        base = max(config.min_repeats * period + min(period, config.confirm_chars), 2 * period)
        if not is_periodic(buffer, end, period, min(base, end)):
            continue
        tested.append(period)
        unit = buffer[end - period :]
        need = required_coverage(unit, config)
        if need is None or not is_periodic(buffer, end, period, need):
            continue
        run = periodic_run(buffer, end, period, known=need)
        return PeriodicLoop(period=period, run=run, unit_class=classify_unit(unit))
    return None


def find_shape_loop(shape: str, config: DetectorConfig) -> PeriodicLoop | None:
    """A tail of the shape view (`charclass.shape_view`: every number read as one `0`) that
    repeats, for loops whose copies differ in their numbers (counters, table values)."""
    end = len(shape)
    anchor = min(config.anchor_chars, max(2, end // 3))
    tested: list[int] = []
    limit = max(1, config.max_candidates // 2)  # numbers make many shifts recur: keep it cheap
    for period in candidate_periods(shape, end, anchor, config.max_period, limit):
        if period == 1 or any(period % shorter == 0 for shorter in tested):
            continue  # one character cannot drift; multiples were judged already
        if not is_periodic(shape, end, period, min(2 * period, end)):
            continue
        tested.append(period)
        unit = shape[end - period :]
        if _LETTER_RE.search(unit) is None:
            continue  # numbers and rules that change are a table (cheap C-level test first)
        need = required_coverage(unit, config, drift=True)
        if need is None or need > end or not is_periodic(shape, end, period, need):
            continue
        run = periodic_run(shape, end, period, known=need)
        return PeriodicLoop(period=period, run=run, unit_class=classify_unit(unit), drift=True)
    return None
