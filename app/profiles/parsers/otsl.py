"""OTSL tables (granite-docling, PaddleOCR-VL) as HTML: `<fcel>` a filled cell, `<ecel>` an
empty one, `<lcel>` merged with the left, `<ucel>` with the one above, `<xcel>` both, `<nl>`
a row end (the tags of PaddleX `convert_otsl_to_html`, 1237a5fa)."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"<(fcel|ecel|lcel|ucel|xcel|nl|ched|rhed|srow)>")


def otsl_grid(text: str) -> list[list[tuple[str, str]]]:
    """Rows of (tag, text) cells."""
    rows: list[list[tuple[str, str]]] = [[]]
    parts = _TOKEN.split(text)
    for index in range(1, len(parts), 2):
        tag, cell_text = parts[index], parts[index + 1] if index + 1 < len(parts) else ""
        if tag == "nl":
            rows.append([])
        else:
            rows[-1].append((tag, cell_text.strip()))
    return [row for row in rows if row]


def otsl_to_html(text: str) -> str:
    """The table as HTML with colspan/rowspan from the merge tags."""
    grid = otsl_grid(text)
    html = []
    for r, row in enumerate(grid):
        cells = []
        for c, (tag, cell_text) in enumerate(row):
            if tag in ("lcel", "ucel", "xcel"):
                continue
            span = _span(grid, r, c)
            cells.append(f"<td{span}>{cell_text}</td>")
        html.append("<tr>" + "".join(cells) + "</tr>")
    return "<table>" + "".join(html) + "</table>"


def _span(grid: list[list[tuple[str, str]]], r: int, c: int) -> str:
    cols = 1
    while c + cols < len(grid[r]) and grid[r][c + cols][0] in ("lcel", "xcel"):
        cols += 1
    rows = 1
    while (
        r + rows < len(grid)
        and c < len(grid[r + rows])
        and grid[r + rows][c][0]
        in (
            "ucel",
            "xcel",
        )
    ):
        rows += 1
    attrs = (f' colspan="{cols}"' if cols > 1 else "") + (f' rowspan="{rows}"' if rows > 1 else "")
    return attrs
