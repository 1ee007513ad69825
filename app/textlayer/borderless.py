"""Tables drawn without rulings: rows of short cells whose columns line up down the page.

The table finder needs rulings; a layout of aligned short cells (a two- or three-column list
of values, an infobox of label/value pairs) has none, and its rows would come out as one
paragraph of run-on cells. Here a *cell row* is two or more short lines side by side on one
baseline, wide gaps between them (a column gap, not a justified word space), in one text block
or in small blocks (MuPDF often cuts such a table into a block per cell or two); a table is
three or more rows in a row whose cells start (or, for numbers, end) at the same columns.
A value that wraps (`Spouses: Æthelflæd / Wulfthryth`) is a row of its own, its label empty;
a row above whose cells stand over all columns but the first is the table's header.

What it must not take for a table: prose in two columns (long lines, no cell row; or,
where each line is a block of its own, columns whose lines are wide and flush at both edges),
a justified line that a PDF stores word by word (gaps of about a space), a bulleted or numbered
list (a first column of bullets or enumerators).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import pairwise

from app.textlayer.model import Box, TableGrid, TextLine

_MAX_CELL_CHARS = 40  # a cell is short: a label, a value, a number
_MIN_GAP_EMS = 1.5  # between two cells of a row, in font sizes (a word space is ~0.3)
_MIN_ROWS = 3  # rows with two or more cells a table needs
_ROW_GAP_LINES = 2.5  # vertical gap between rows, in line heights, that still continues a table
_CELL_BLOCK_LINES = 3  # lines of a block MuPDF cut from a table: a cell, wrapped at most twice
_PROSE_EMS = 10  # a justified line at least this many font sizes wide is prose, not a cell
_PROSE_SHARE = 0.6  # share of a column's lines flush at both edges that makes it prose
_ENUMERATOR = re.compile(r"^(?:[•·▪‣◦\-–*]|\(?[0-9a-zA-Z]{1,3}[.)])$")

Row = list[int]  # indexes of the lines of one row, left to right


def borderless_tables(lines: Sequence[TextLine], taken: set[int]) -> list[tuple[TableGrid, Row]]:
    """The tables of `lines` (leaving out those in `taken`), each with the lines it holds."""
    rows = _rows(lines, taken)
    tables: list[tuple[TableGrid, Row]] = []
    used: set[int] = set()
    for start, row in enumerate(rows):
        if row[0] in used or not _is_cell_row(row, lines):
            continue
        members = _header_above(rows, start, lines, used) + _grow(rows, start, lines, used)
        table = _grid(members, row, lines)
        if table is not None:
            tables.append((table, [i for member in members for i in member]))
            used.update(i for member in members for i in member)
    return tables


def _rows(lines: Sequence[TextLine], taken: set[int]) -> list[Row]:
    """Lines on one baseline (centres within half a line), top to bottom, each row left to
    right. Lines of one block share a row; lines of two blocks only where both blocks are
    small (`_CELL_BLOCK_LINES`): MuPDF cuts a borderless table into blocks of a cell or two,
    while the columns of prose or of an index are blocks of many lines each."""
    kept = [i for i, line in enumerate(lines) if i not in taken and not line.vertical]
    sizes = Counter(lines[i].block for i in kept)
    rows: list[Row] = []
    for i in sorted(kept, key=lambda i: _centre(lines[i])):
        row = next(
            (row for row in _near(rows, lines[i], lines) if _joins(i, row, lines, sizes)), None
        )
        if row is None:
            rows.append([i])
        else:
            row.append(i)
    rows = [sorted(row, key=lambda i: lines[i].box.x0) for row in rows]
    return sorted(rows, key=lambda row: min(lines[i].box.y0 for i in row))


def _near(rows: list[Row], line: TextLine, lines: Sequence[TextLine]) -> Iterator[Row]:
    """The rows begun within two line heights above `line`, latest first (rows are begun in
    the order of their first line's centre, so the search stops at the first one further up)."""
    for row in reversed(rows):
        if _centre(lines[row[0]]) < _centre(line) - 2 * line.box.height:
            return
        yield row


def _joins(i: int, row: Row, lines: Sequence[TextLine], sizes: Counter[int]) -> bool:
    """Line `i` sits on the baseline of `row`, in its block or in small blocks only."""
    line, last = lines[i], lines[row[-1]]
    if abs(_centre(line) - _centre(last)) >= line.box.height / 2:
        return False
    small = sizes[line.block] <= _CELL_BLOCK_LINES
    return all(
        lines[j].block == line.block or (small and sizes[lines[j].block] <= _CELL_BLOCK_LINES)
        for j in row
    )


def _centre(line: TextLine) -> float:
    return (line.box.y0 + line.box.y1) / 2


def _is_cell_row(row: Row, lines: Sequence[TextLine]) -> bool:
    if len(row) < 2 or any(len(lines[i].text) > _MAX_CELL_CHARS for i in row):
        return False
    pairs = pairwise(row)
    return all(lines[b].box.x0 - lines[a].box.x1 >= _MIN_GAP_EMS * lines[a].size for a, b in pairs)


def _grow(rows: list[Row], start: int, lines: Sequence[TextLine], used: set[int]) -> list[Row]:
    """The rows from `start` down that line up with its columns (wrapped values included)."""
    first = rows[start]
    members = [first]
    span = (lines[first[0]].box.x0, max(lines[i].box.x1 for i in first))
    bottom = max(lines[i].box.y1 for i in first)
    for row in rows[start + 1 :]:
        box = _box(row, lines)
        if box.x1 < span[0] or box.x0 > span[1] + _MAX_CELL_CHARS * lines[row[0]].size:
            continue  # beside the table (the other column of the page)
        height = box.height or 1.0
        if row[0] in used or box.y0 - bottom > _ROW_GAP_LINES * height:
            break
        aligned = _aligned(row, first, lines)
        if not (aligned and (_is_cell_row(row, lines) or _wraps_a_value(row, first, lines))):
            break
        members.append(row)
        bottom = box.y1
    return members


def _aligned(row: Row, head: Row, lines: Sequence[TextLine]) -> bool:
    """Every cell of `row` starts or ends where a cell of the table's first row does."""
    return all(_column(lines[i], head, lines) is not None for i in row)


def _column(line: TextLine, head: Row, lines: Sequence[TextLine]) -> int | None:
    slack = line.size
    for j, i in enumerate(head):
        cell = lines[i].box
        if abs(line.box.x0 - cell.x0) <= slack or abs(line.box.x1 - cell.x1) <= slack:
            return j
    return None


def _wraps_a_value(row: Row, head: Row, lines: Sequence[TextLine]) -> bool:
    """A lone short line under a column other than the first: a value that wrapped."""
    if len(row) != 1 or len(lines[row[0]].text) > _MAX_CELL_CHARS:
        return False
    column = _column(lines[row[0]], head, lines)
    return column is not None and column > 0


def _header_above(
    rows: list[Row], start: int, lines: Sequence[TextLine], used: set[int]
) -> list[Row]:
    """The row just above the table's first when its cells stand over the table's columns
    but leave the first (a header over the values, its stub cell empty): none otherwise."""
    if start == 0:
        return []
    above, first = rows[start - 1], rows[start]
    gap = min(lines[i].box.y0 for i in first) - max(lines[i].box.y1 for i in above)
    if above[0] in used or gap > _ROW_GAP_LINES * lines[first[0]].box.height:
        return []
    if not _is_cell_row(above, lines) or len(above) >= len(first):
        return []
    columns = [_column(lines[i], first, lines) for i in above]
    return [above] if None not in columns and 0 not in columns else []


def _grid(members: list[Row], head: Row, lines: Sequence[TextLine]) -> TableGrid | None:
    full = [row for row in members if len(row) >= 2]
    if len(full) < _MIN_ROWS:
        return None
    cells = [[""] * len(head) for _ in members]
    for r, row in enumerate(members):
        for i in row:
            j = _column(lines[i], head, lines) or 0
            cells[r][j] = f"{cells[r][j]} {lines[i].text}".strip()
    columns = list(zip(*cells, strict=True))
    if any(len({c for c in column if c}) < 2 for column in columns):
        return None  # a column of one repeated text: bullets, a rule of dashes
    if all(_ENUMERATOR.match(c) for c in columns[0] if c):
        return None  # a numbered or bulleted list
    if any(_is_prose_column(members, head, j, lines) for j in range(len(head))):
        return None
    box = _box([i for row in members for i in row], lines)
    bounds = [(lines[i].box.x0, lines[i].box.x1) for i in head]
    return TableGrid(box, cells, bounds)


def _is_prose_column(members: list[Row], head: Row, j: int, lines: Sequence[TextLine]) -> bool:
    """Most of column `j`'s lines wide and flush at both edges: a justified column of prose
    (two columns of text whose every line is a block of its own), not cells, whose widths vary."""
    column = [
        lines[i] for row in members for i in row if (_column(lines[i], head, lines) or 0) == j
    ]
    if len(column) < _MIN_ROWS:
        return False
    right = max(line.box.x1 for line in column)
    left = min(line.box.x0 for line in column)
    flush = [
        line
        for line in column
        if line.box.x1 >= right - line.size
        and line.box.x0 <= left + line.size
        and line.box.width >= _PROSE_EMS * line.size
    ]
    return len(flush) >= _PROSE_SHARE * len(column)


def _box(indexes: Sequence[int], lines: Sequence[TextLine]) -> Box:
    return Box(
        min(lines[i].box.x0 for i in indexes),
        min(lines[i].box.y0 for i in indexes),
        max(lines[i].box.x1 for i in indexes),
        max(lines[i].box.y1 for i in indexes),
    )
