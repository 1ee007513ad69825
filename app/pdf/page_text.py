"""A page's text as Folio reads it (PyMuPDF): bounded by the caps, and only what a reader sees.

Every reading of a page's own text for grounding, the text-layer fallback and its layout goes
through here: the page's content is counted before MuPDF extracts anything
(`app.pdf.text_bounds`), the extraction is counted again, and what no reader sees is taken
out (`app.pdf.visible`).
"""

from __future__ import annotations

from typing import Any

import pymupdf

from app.pdf.text_bounds import TextCaps, check_content, check_read, count_content
from app.pdf.visible import Seen, seen_text

# MuPDF's plain-text flags (what `Page.get_text()` reads with), for the "dict" reading: the
# same characters, with each span's size, box and alpha.
TEXT_FLAGS = pymupdf.TEXTFLAGS_TEXT


def read_seen(page: pymupdf.Page, caps: TextCaps, flags: int = TEXT_FLAGS) -> Seen:
    """Page `page`'s text a reader sees; `TextLayerTooLarge` when it is over `caps`."""
    number = page.number + 1
    check_content(count_content(page.parent, page), caps, number)
    blocks = page.get_text("dict", flags=flags)["blocks"]
    check_read(blocks, caps, number)
    return seen_in(page, blocks)


def seen_in(page: pymupdf.Page, blocks: list[dict[str, Any]]) -> Seen:
    """What a reader sees of `blocks`, read from `page` ("dict" or "rawdict" blocks whose
    spans carry their text)."""
    text_blocks = [b for b in blocks if b.get("type", 0) == 0]
    # The draw log is what says whether an image covers text: only a page with images asks.
    draws = page.get_bboxlog() if page.get_images() else []
    return seen_text(text_blocks, draws, tuple(page.rect))


class SeenPlaces:
    """Where a page's seen lines lie, to ask whether a word read by another of MuPDF's
    readings ("words") is one of them: its centre inside a seen line's box."""

    _CELL = 24.0  # points a side of the grid the lines are filed in

    def __init__(self, seen: Seen) -> None:
        self.cells: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}
        lines = [] if seen.is_scan else [ln for b in seen.blocks for ln in b["lines"]]
        for line in lines:
            x0, y0, x1, y1 = line["bbox"]
            for column in range(int(x0 // self._CELL), int(x1 // self._CELL) + 1):
                for row in range(int(y0 // self._CELL), int(y1 // self._CELL) + 1):
                    self.cells.setdefault((column, row), []).append((x0, y0, x1, y1))

    def holds(self, box: tuple[float, float, float, float]) -> bool:
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        near = self.cells.get((int(cx // self._CELL), int(cy // self._CELL)), ())
        return any(x0 <= cx <= x1 and y0 <= cy <= y1 for x0, y0, x1, y1 in near)


def seen_places(page: pymupdf.Page) -> SeenPlaces:
    """The places of `page`'s seen lines (read after `read_seen` let the page through)."""
    return SeenPlaces(seen_in(page, page.get_text("dict", flags=TEXT_FLAGS)["blocks"]))
