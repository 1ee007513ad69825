"""Markdown from a page's text layer: reading order, headings, paragraphs, tables (ruled ones
from the table finder, borderless ones from aligned short cells: `borderless`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.textlayer.borderless import borderless_tables
from app.textlayer.edges import body_size, running_lines
from app.textlayer.equations import display_equations
from app.textlayer.inline import inline_text, rows, shares_formula_row
from app.textlayer.model import Box, PageLayout, TableGrid, TextLine
from app.textlayer.order import by_section_numbers, xy_cut
from app.textlayer.paragraphs import join_lines
from app.textlayer.tables import is_table_like, table_markdown, with_header_rows
from app.textlayer.unicode import normalize

# A horizontal gap of this many line heights parts sections: rows of a grid of cards are read
# one after the other (mathfuncs in the olmOCR-bench sample: 3 line heights), while the paragraph
# gaps of two columns (under 2) that happen to line up do not cut the columns.
SECTION_GAP = 2.5


@dataclass(frozen=True)
class Item:
    """A block of the page in reading order: a run of lines, or a table."""

    box: Box
    lines: tuple[TextLine, ...] = ()
    table: TableGrid | None = None
    equation: str | None = None  # LaTeX of a displayed formula


def page_markdown(layout: PageLayout) -> str:
    """The page as Markdown, running headers and footers left out."""
    tables: list[TableGrid] = []
    headers: set[int] = set()
    for table in filter(is_table_like, layout.tables):
        table, header = with_header_rows(table, layout.lines, headers)
        headers |= header
        tables.append(table)
    dropped = running_lines(layout, protected=headers) | headers
    dropped |= {
        i
        for i, line in enumerate(layout.lines)
        if any(t.box.contains_center_of(line.box) for t in tables)
    }
    equations = display_equations(layout.lines, dropped)
    for equation in equations:
        dropped |= equation.lines
    for grid, members in borderless_tables(layout.lines, dropped):
        tables.append(grid)
        dropped.update(members)
    kept = [line for i, line in enumerate(layout.lines) if i not in dropped]
    items = [*_blocks(kept), *(Item(t.box, table=t) for t in tables)]
    items += [Item(e.box, equation=e.latex) for e in equations]
    body = body_size(kept)
    parts = [_render(item, body) for item in reading_order(items, layout.width)]
    parts = by_section_numbers([part for part in parts if part])
    return "\n\n".join(_merge_continuations(parts))


def _merge_continuations(parts: list[str]) -> list[str]:
    """Blocks that continue the one before (a column or block break mid-sentence, a drop cap
    "O" before "ver the past") are one paragraph."""
    merged: list[str] = []
    for part in parts:
        previous = merged[-1] if merged else ""
        if _is_drop_cap(previous) and part[:1].islower():
            merged[-1] = previous.lstrip("# ") + part
        elif _continues(previous, part):
            merged[-1] = join_lines([previous, part])
        else:
            merged.append(part)
    return merged


def _is_drop_cap(text: str) -> bool:
    letter = text.lstrip("# ")
    return len(letter) == 1 and letter.isupper()


def _continues(previous: str, part: str) -> bool:
    if not previous or previous.startswith(("#", "|")) or part.startswith(("#", "|")):
        return False
    open_sentence = not previous.endswith((".", "!", "?", ":", ";", '"', "”", "’", ")"))
    return open_sentence and part[:1].islower()


def _blocks(lines: Sequence[TextLine]) -> list[Item]:
    grouped: dict[int, list[TextLine]] = {}
    previous: TextLine | None = None
    for line in lines:
        block = line.block
        if previous is not None and block != previous.block and shares_formula_row(previous, line):
            block = previous.block  # MuPDF parted a formula's row into two blocks at its limits
            line = replace(line, block=block)
        grouped.setdefault(block, []).append(line)
        previous = line
    items = []
    for members in grouped.values():
        box = Box(
            min(line.box.x0 for line in members),
            min(line.box.y0 for line in members),
            max(line.box.x1 for line in members),
            max(line.box.y1 for line in members),
        )
        items.append(Item(box, tuple(members)))
    return items


def reading_order(items: Sequence[Item], width: float) -> list[Item]:
    """Columns left to right, and between the items that span a gutter, top to bottom
    (`order.xy_cut`); `width` is kept for callers that pass the page's width."""
    heights = sorted(line.box.height for item in items for line in item.lines)
    line_height = heights[len(heights) // 2] if heights else 12.0
    return xy_cut(items, lambda item: item.box, SECTION_GAP * line_height)


def _render(item: Item, body: float) -> str:
    if item.table is not None:
        return table_markdown(item.table.rows)
    if item.equation is not None:
        return f"$${item.equation}$$"
    text = normalize(join_lines([inline_text(row) for row in rows(item.lines)]))
    if not text:
        return ""
    level = _heading_level(item.lines, body, text)
    return f"{'#' * level} {text}" if level else text


def _heading_level(lines: Sequence[TextLine], body: float, text: str) -> int:
    """Markdown heading level by font size over the body's (bold short lines: level 3)."""
    if len(text) > 200 or not body or not any(ch.isalpha() for ch in text):
        return 0
    size = min(line.size for line in lines)
    if size >= body * 1.8:
        return 1
    if size >= body * 1.35:
        return 2
    bold = all(line.bold for line in lines)
    if (size >= body * 1.15 or bold) and len(lines) <= 2 and not text.endswith((".", ":")):
        return 3
    return 0
