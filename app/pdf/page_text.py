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
