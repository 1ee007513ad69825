"""Tables drawn without rulings: rows of short cells whose columns line up down the page.

The table finder needs rulings; a layout of aligned short cells (a two- or three-column list
of values, an infobox of label/value pairs) has none, and its rows would come out as one
paragraph of run-on cells. Here a *cell row* is a text block holding two or more short lines
side by side, wide gaps between them (a column gap, not a justified word space); a table is
three or more rows in a row whose cells start (or, for numbers, end) at the same columns.
A value that wraps (`Spouses: Æthelflæd / Wulfthryth`) is a row of its own, its label empty.

What it must not take for a table: prose in two columns (long lines, no cell row), a justified
line that a PDF stores word by word (gaps of about a space), a bulleted or numbered list (a
first column of bullets or enumerators).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

from app.textlayer.model import Box, TableGrid, TextLine

_MAX_CELL_CHARS = 40  # a cell is short: a label, a value, a number
_MIN_GAP_EMS = 1.5  # between two cells of a row, in font sizes (a word space is ~0.3)
_MIN_ROWS = 3  # rows with two or more cells a table needs
_ROW_GAP_LINES = 2.5  # vertical gap between rows, in line heights, that still continues a table
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
        members = _grow(rows, start, lines, used)
        table = _grid(members, lines)
        if table is not None:
            tables.append((table, [i for member in members for i in member]))
            used.update(i for member in members for i in member)
    return tables


def _rows(lines: Sequence[TextLine], taken: set[int]) -> list[Row]:
    """Lines of one block on one baseline (centres within half a line), top to bottom, each
    row left to right."""
    order = sorted(
        (i for i, line in enumerate(lines) if i not in taken and not line.vertical),
        key=lambda i: (lines[i].block, _centre(lines[i])),
    )
    rows: list[Row] = []
    for i in order:
        last = rows[-1][-1] if rows else None
        if (
            last is not None
            and lines[last].block == lines[i].block
            and abs(_centre(lines[i]) - _centre(lines[last])) < lines[i].box.height / 2
        ):
            rows[-1].append(i)
        else:
            rows.append([i])
    rows = [sorted(row, key=lambda i: lines[i].box.x0) for row in rows]
    return sorted(rows, key=lambda row: min(lines[i].box.y0 for i in row))


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


def _grid(members: list[Row], lines: Sequence[TextLine]) -> TableGrid | None:
    head = members[0]
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
    box = _box([i for row in members for i in row], lines)
    bounds = [(lines[i].box.x0, lines[i].box.x1) for i in head]
    return TableGrid(box, cells, bounds)


def _box(indexes: Sequence[int], lines: Sequence[TextLine]) -> Box:
    return Box(
        min(lines[i].box.x0 for i in indexes),
        min(lines[i].box.y0 for i in indexes),
        max(lines[i].box.x1 for i in indexes),
        max(lines[i].box.y1 for i in indexes),
    )
