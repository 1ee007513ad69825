"""Tables as Markdown: header rows the finder left above the rulings, currency cells joined."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from app.textlayer.model import TableGrid, TextLine
from app.textlayer.unicode import normalize

MAX_HEADER_ROWS = 3
_CURRENCY = {"$", "€", "£", "¥"}


def is_table_like(table: TableGrid) -> bool:
    """A grid of short cells; a ruled box around prose (an abstract in a frame) is not a table."""
    filled = {j for row in table.rows for j, cell in enumerate(row) if cell}
    if len(filled) < 2:
        return False
    lengths = sorted(len(cell) for row in table.rows for cell in row if cell)
    return lengths[len(lengths) // 2] <= 40 and lengths[-1] <= 300


def with_header_rows(
    table: TableGrid, lines: Sequence[TextLine], taken: set[int]
) -> tuple[TableGrid, set[int]]:
    """`table` with the rows of text set tight above it (a header over the first ruling) added
    on top, and the indexes of the lines that went into them."""
    if not table.columns:
        return table, set()
    header: list[list[str]] = []
    used: set[int] = set()
    top = table.box.y0
    for row in _rows_above(table, lines, taken):
        height = max(lines[i].box.height for i in row)
        if top - max(lines[i].box.y1 for i in row) > height or len(header) == MAX_HEADER_ROWS:
            break
        cells = [""] * len(table.columns)
        for i in sorted(row, key=lambda i: lines[i].box.x0):
            j = _column_of(lines[i], table.columns)
            cells[j] = f"{cells[j]} {lines[i].text}".strip()
        header.insert(0, cells)
        used.update(row)
        top = min(lines[i].box.y0 for i in row)
    return replace(table, rows=header + table.rows), used


def _rows_above(table: TableGrid, lines: Sequence[TextLine], taken: set[int]) -> list[list[int]]:
    """Rows of lines above the table within its width, nearest first."""
    box = table.box
    candidates = [
        i
        for i, line in enumerate(lines)
        if i not in taken
        and line.box.y1 <= box.y0 + 1
        and line.box.x0 >= box.x0 - 5
        and line.box.x1 <= box.x1 + 5
        and box.y0 - line.box.y1 < 4 * line.box.height * MAX_HEADER_ROWS
    ]
    rows: list[list[int]] = []
    top = 0.0  # the open row's highest top, kept as lines join it (one pass, not n^2)
    for i in sorted(candidates, key=lambda i: -lines[i].box.y1):
        if rows and lines[i].box.y1 > top + 1:
            rows[-1].append(i)
            top = min(top, lines[i].box.y0)
        else:
            rows.append([i])
            top = lines[i].box.y0
    return rows


def _column_of(line: TextLine, columns: Sequence[tuple[float, float]]) -> int:
    overlaps = [min(line.box.x1, x1) - max(line.box.x0, x0) for x0, x1 in columns]
    return max(range(len(columns)), key=lambda j: overlaps[j])


def table_markdown(rows: Sequence[Sequence[str]]) -> str:
    """A Markdown (GFM) table, the first row as its header."""
    width = max(len(row) for row in rows)
    cells = [[_cell(c) for c in row] + [""] * (width - len(row)) for row in rows]
    cells = _merge_split_columns(_drop_empty_columns(_join_currency(cells)))
    lines = [_row(cells[0]), _row(["---"] * len(cells[0])), *(_row(row) for row in cells[1:])]
    return "\n".join(lines)


def _join_currency(rows: list[list[str]]) -> list[list[str]]:
    """ "$" alone in a cell belongs to the amount beside it: "$ | 178" is "$178", in the
    amount's column, the one its header sits over (the symbol's column is left empty)."""
    for row in rows:
        for j in range(len(row) - 1):
            if row[j] in _CURRENCY and row[j + 1]:
                row[j], row[j + 1] = "", row[j] + row[j + 1]
    return rows


def _drop_empty_columns(rows: list[list[str]]) -> list[list[str]]:
    """Columns with nothing below their header go; a header left alone moves one column left."""
    body = rows[1:] or rows
    for j in range(len(rows[0]) - 1, 0, -1):
        if any(row[j] for row in body):
            continue
        if all(not row[j] or not row[j - 1] for row in rows):
            for row in rows:
                row[j - 1] = row[j - 1] or row[j]
            for row in rows:
                del row[j]
    return rows


def _merge_split_columns(rows: list[list[str]]) -> list[list[str]]:
    """Two neighbouring columns that no row fills both of are one column the finder split
    (an amount set under its header in some rows and under the currency sign's column in
    others, as 10-K tables are). Two headed columns never merge: the header row fills both."""
    for j in range(len(rows[0]) - 1, 0, -1):
        if any(row[j] and row[j - 1] for row in rows):
            continue
        for row in rows:
            row[j - 1] = row[j - 1] or row[j]
            del row[j]
    return rows


def _cell(text: str) -> str:
    return normalize(" ".join(text.split())).replace("|", "\\|")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
