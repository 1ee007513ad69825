"""Reading a page's text layer with its geometry (PyMuPDF) into the text-layer room's values."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from typing import Any

import pymupdf

from app.pdf.page_text import seen_in
from app.textlayer.equations import has_math_signs
from app.textlayer.model import Box, Glyph, PageLayout, TableGrid, TextLine
from app.textlayer.words import has_run_together_words

EDGE_BAND = 0.12  # share of the page height at the top and at the bottom where running lines sit
NEIGHBOURS = (-2, -1, 1, 2)  # running headers repeat on adjacent pages, or on every other one
_MIN_RULINGS = 3  # fewer rulings than this: no table worth the table finder's time
_TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
_WORD_GAP = 0.11  # a gap between glyphs wider than this share of the font size parts two words
_LAM, _ALEFS = "\u0644", "\u0627\u0623\u0625\u0622"  # Arabic lam; alef, with hamza, madda
_LONE_UNDERSCORES = re.compile(r"^[_ ]+$", re.MULTILINE)  # a line of a cell holding only "_"
_NO_WIDTH = 0.01  # points: a glyph's second letter is placed with no width of its own


def read_layout(
    doc: pymupdf.Document, index: int, edges_read: dict[int, list[str]] | None = None
) -> PageLayout:
    """The layout of page `index` (0-based), with the edge lines of its neighbours.

    `edges_read` (page index -> edge lines) keeps the edges read for earlier pages of the same
    document, so each page's edges are read once, not once per neighbour; it starts empty.
    Tables are left for `read_tables`: the finder is the costly part, run on accepted layers.
    """
    page = doc[index]
    known = {} if edges_read is None else edges_read
    neighbours = [n for n in (index + d for d in NEIGHBOURS) if 0 <= n < len(doc)]
    for n in neighbours:
        if n not in known:
            known[n] = _edge_texts(doc[n])
    return PageLayout(
        width=page.rect.width,
        height=page.rect.height,
        lines=_lines(page),
        images=_images(page),
        neighbour_edges=[known[n] for n in neighbours],
    )


def _lines(page: pymupdf.Page) -> list[TextLine]:
    lines = _read_lines(_seen_blocks(page, page.get_text("dict", flags=_TEXT_FLAGS)["blocks"]))
    spaced = any(has_run_together_words(line.text) for line in lines)
    formulas = any(has_math_signs(line.text) for line in lines)
    arabic = any(_LAM in line.text for line in lines)
    if spaced or formulas or arabic:
        # Words placed by position without space characters ("Compositionofthedata"): read
        # the glyphs and part words where the gap between two glyphs says so. Formulas: the
        # glyphs' sizes and baselines are their layout (scripts, fractions, limits). Arabic:
        # a lam-alef ligature's two letters, in the order the glyph gives them.
        blocks = page.get_text("rawdict", flags=_TEXT_FLAGS)["blocks"]
        for block in blocks:
            for line in block.get("lines", ()):
                for span in line["spans"]:
                    chars = _ligatures_in_order(span["chars"]) if arabic else span["chars"]
                    text = "".join(char["c"] for char in chars)
                    span["text"] = _spaced(chars, span["size"]) if spaced else text
        lines = _read_lines(_seen_blocks(page, blocks), glyphs=formulas)
    return lines


def _seen_blocks(page: pymupdf.Page, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks' lines a reader sees (none on a page that is mostly unseen: a scan)."""
    seen = seen_in(page, blocks)
    return [] if seen.is_scan else seen.blocks


def _ligatures_in_order(chars: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lam before alef where one glyph, the lam-alef ligature, gave them alef first.

    Such a glyph maps to two letters placed at once: the second has no width. Some PDFs
    (Word's among them) map it in visual order, alef then lam ("كاالت" for "كلاات", "اإل"
    for "الإ"); a weightless alef right before a lam is that glyph's, written backwards.
    """
    ordered, i = list(chars), 0
    while i < len(ordered) - 1:
        alef, lam = ordered[i], ordered[i + 1]
        weightless = alef["bbox"][2] - alef["bbox"][0] < _NO_WIDTH
        if alef["c"] in _ALEFS and weightless and lam["c"] == _LAM:
            ordered[i], ordered[i + 1] = lam, alef
            i += 1  # that alef is placed: it starts no other pair
        i += 1
    return ordered


def _read_lines(blocks: list[dict[str, Any]], glyphs: bool = False) -> list[TextLine]:
    lines = []
    for number, block in enumerate(blocks):
        for raw in block.get("lines", ()):
            if line := _line(raw, number):
                if glyphs:
                    line = replace(line, glyphs=_glyphs(raw))
                lines.append(line)
    return lines


def _glyphs(raw: dict[str, Any]) -> tuple[Glyph, ...]:
    return tuple(
        Glyph(
            char["c"],
            Box(*char["bbox"]),
            span["size"],
            char["origin"][1],
            _is_bold(span),
            span["font"],
        )
        for span in raw["spans"]
        for char in span["chars"]
        if char["c"].strip() and char["c"] not in "\u200b\ufffd"
    )


def _spaced(chars: list[dict[str, Any]], size: float) -> str:
    text = ""
    for previous, char in zip([None, *chars], chars, strict=False):
        gap = char["bbox"][0] - previous["bbox"][2] if previous else 0.0
        if gap > _WORD_GAP * size and not char["c"].isspace() and not text[-1:].isspace():
            text += " "
        text += char["c"]
    return text


def _line(raw: dict[str, Any], block: int) -> TextLine | None:
    spans = [s for s in raw["spans"] if s["text"].strip()]
    if not spans:
        return None
    text = "".join(s["text"] for s in raw["spans"]).strip()
    chars = sum(len(s["text"]) for s in spans)
    size = sum(s["size"] * len(s["text"]) for s in spans) / chars
    bold = sum(len(s["text"]) for s in spans if _is_bold(s)) > chars / 2
    invisible = all(s.get("alpha", 255) == 0 for s in spans)
    vertical = abs(raw["dir"][1]) > abs(raw["dir"][0])
    return TextLine(text, Box(*raw["bbox"]), round(size, 1), bold, block, invisible, vertical)


def _is_bold(span: dict[str, Any]) -> bool:
    return bool(span["flags"] & pymupdf.TEXT_FONT_BOLD) or "bold" in span["font"].lower()


def _images(page: pymupdf.Page) -> list[Box]:
    area = page.rect
    boxes = (pymupdf.Rect(info["bbox"]) & area for info in page.get_image_info())
    return [Box(*rect) for rect in boxes if not rect.is_empty]


def read_tables(page: pymupdf.Page) -> list[TableGrid]:
    """Tables PyMuPDF's finder outlines, on pages with a few horizontal or vertical rulings."""
    minimum = page.rect.width * 0.03
    rulings = sum(_is_ruling(item, minimum) for d in page.get_cdrawings() for item in d["items"])
    if rulings < _MIN_RULINGS:
        return []
    # PyMuPDF >= 1.27 prints an advert for its layout package on the first table search.
    getattr(pymupdf, "no_recommend_layout", lambda: None)()
    grids = []
    for table in page.find_tables().tables:
        rows = [
            [_cell(value, page, box) for value, box in zip(values, row.cells, strict=False)]
            for values, row in zip(table.extract(), table.rows, strict=True)
        ]
        if table.col_count >= 2 and (table.row_count >= 2 or table.col_count >= 3):
            grids.append(TableGrid(Box(*table.bbox), rows, _columns(table)))
    return grids


def _columns(table: Any) -> list[tuple[float, float]]:
    """Each column's x extent, from the cells that are not merged across columns."""
    starts: list[list[float]] = [[] for _ in range(table.col_count)]
    ends: list[list[float]] = [[] for _ in range(table.col_count)]
    for row in table.rows:
        for j, cell in enumerate(row.cells[: table.col_count]):
            if cell is not None:
                starts[j].append(cell[0])
                ends[j].append(cell[2])
    return [
        (min(s) if s else table.bbox[0], min(e) if e else table.bbox[2])
        for s, e in zip(starts, ends, strict=True)
    ]


def _is_ruling(item: tuple[Any, ...], minimum: float) -> bool:
    """A straight horizontal or vertical stroke (or hairline box) at least `minimum` long."""
    if item[0] == "l":
        (x0, y0), (x1, y1) = item[1], item[2]
        width, height = abs(x1 - x0), abs(y1 - y0)
        return min(width, height) < 1 and max(width, height) >= minimum
    if item[0] == "re":
        x0, y0, x1, y1 = item[1]
        width, height = abs(x1 - x0), abs(y1 - y0)
        return min(width, height) < 3 and max(width, height) >= minimum
    return False


def _cell(value: str | None, page: pymupdf.Page, box: Any) -> str:
    """A cell's text in reading order. The finder orders a cell's glyphs by their lines' height
    and then left to right, which writes Arabic, Persian and Hebrew backwards ("نام" as "مان")
    and moves an underscore, which sits below the baseline, to a line of its own ("USER NAME"
    over "_" for "USER_NAME"); the page's own text of the cell's box keeps the order the PDF
    wrote them in, as `_lines` reads them."""
    if value and box is not None and (_has_right_to_left(value) or _LONE_UNDERSCORES.search(value)):
        raw = page.get_text("rawdict", clip=pymupdf.Rect(box), flags=_TEXT_FLAGS)
        value = " ".join(
            "".join(char["c"] for char in _ligatures_in_order(span["chars"]))
            for block in raw["blocks"]
            for line in block.get("lines", ())
            for span in line["spans"]
        )
    return " ".join((value or "").split())


def _has_right_to_left(text: str) -> bool:
    return any(unicodedata.bidirectional(char) in ("R", "AL") for char in text)


def _edge_texts(page: pymupdf.Page) -> list[str]:
    """The text lines in the top and bottom bands of a page (cheaper than reading it all)."""
    rect, band = page.rect, page.rect.height * EDGE_BAND
    top = pymupdf.Rect(rect.x0, rect.y0, rect.x1, rect.y0 + band)
    bottom = pymupdf.Rect(rect.x0, rect.y1 - band, rect.x1, rect.y1)
    texts = page.get_text("text", clip=top) + "\n" + page.get_text("text", clip=bottom)
    return [line.strip() for line in texts.splitlines() if line.strip()]
