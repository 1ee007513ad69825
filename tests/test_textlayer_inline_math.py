"""Formulas inside a sentence, set in a math font with their scripts, come out as `$...$`."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from app.pdf.layout import read_layout
from app.textlayer import page_markdown

MATH_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuMathTeXGyre.ttf")  # Debian fonts-dejavu


def _sentence(pieces: list[tuple[float, float, float, str, str]]) -> str:
    """One line of prose with pieces placed by x, baseline, size, text and font ("math": a
    math font, as TeX sets a formula's symbols in one)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    if MATH_FONT.is_file():
        page.insert_font(fontname="math", fontfile=str(MATH_FONT))
    page.insert_text((72, 100), "A paragraph of plain prose comes first on the page.", fontsize=11)
    for x, y, size, text, font in pieces:
        page.insert_text((x, y), text, fontsize=size, fontname=font)
    return page_markdown(read_layout(pymupdf.open("pdf", doc.tobytes()), 0))


def test_a_formula_in_a_sentence_keeps_its_subscripts_and_relation() -> None:
    if not MATH_FONT.is_file():
        pytest.skip(f"no math font at {MATH_FONT}")
    markdown = _sentence(
        [
            (72, 130, 11, "We conclude that", "tiro"),
            (158, 130, 11, "\u03bb", "math"),
            (164, 133, 8, "g", "tiit"),  # its subscript, smaller and lowered
            (172, 130, 11, "=", "math"),
            (182, 130, 11, "\u03bb", "math"),
            (188, 133, 8, "h", "tiit"),
            (196, 130, 11, "for every pair.", "tiro"),
        ]
    )
    assert r"We conclude that $\lambda_{g}=\lambda_{h}$ for every pair." in markdown


def test_a_footnote_mark_after_a_word_stays_text() -> None:
    markdown = _sentence(
        [
            (72, 130, 11, "The market share grew", "tiro"),
            (184, 126, 7, "6", "tiro"),
            (190, 130, 11, "in that year.", "tiro"),
        ]
    )
    assert "$" not in markdown
    assert "The market share grew" in markdown
