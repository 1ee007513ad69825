"""Displayed formulas in a text layer come out as LaTeX; formulas inside prose stay text."""

from __future__ import annotations

import pymupdf

from app.pdf.layout import read_layout
from app.textlayer import page_markdown
from app.textlayer.order import by_section_numbers

PROSE = "The theorem below relates the three sides of every right triangle in the plane."
Glyphs = list[tuple[float, float, float, str]]  # x, baseline y, size, text


def _markdown(glyphs: Glyphs, prose_at: float = 100) -> str:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, prose_at), PROSE, fontsize=11, fontname="tiro")
    for x, y, size, text in glyphs:
        page.insert_text((x, y), text, fontsize=size, fontname="tiro")
    data = doc.tobytes()
    return page_markdown(read_layout(pymupdf.open("pdf", data), 0))


def _pythagoras(x: float, y: float) -> Glyphs:
    """a² + b² = c², the exponents set small and raised as TeX sets them."""
    return [
        (x, y, 14, "a"),
        (x + 7, y - 6, 10, "2"),
        (x + 14, y, 14, "+ b"),
        (x + 34, y - 6, 10, "2"),
        (x + 41, y, 14, "= c"),
        (x + 61, y - 6, 10, "2"),
    ]


def test_a_displayed_formula_with_exponents_is_latex() -> None:
    markdown = _markdown(_pythagoras(250, 150))
    assert "$$a^{2}+b^{2}=c^{2}$$" in markdown
    assert PROSE in markdown


def test_a_fraction_and_a_subscript_are_read_from_their_places() -> None:
    # f = (x + 1) / n + y_i, the numerator over the denominator around the row's baseline
    glyphs = [
        (200, 200, 14, "f ="),
        (222, 192, 14, "x + 1"),
        (230, 210, 14, "n"),
        (258, 200, 14, "+ y"),
        (280, 204, 9, "i"),
    ]
    markdown = _markdown(glyphs)
    assert r"$$f=\frac{x+1}{n}+y_{i}$$" in markdown


def test_a_formula_inside_a_sentence_stays_text() -> None:
    glyphs = [(72, 150, 11, "where the sides are"), *_pythagoras(166, 150)]
    markdown = _markdown(glyphs)
    assert "$$" not in markdown
    assert "where the sides are" in markdown


def test_a_formula_without_scripts_or_fractions_stays_text() -> None:
    markdown = _markdown([(250, 150, 14, "s(t) = 0")])
    assert "$$" not in markdown
    assert "s(t) = 0" in markdown


def test_numbered_sections_follow_their_numbers_where_the_layout_broke_them() -> None:
    parts = ["# Title", "### 1. One", "one", "### 3. Three", "three", "### 2. Two", "two"]
    assert by_section_numbers(parts) == [
        "# Title",
        "### 1. One",
        "one",
        "### 2. Two",
        "two",
        "### 3. Three",
        "three",
    ]
    gap = ["### 1. One", "### 3. Three", "### 4. Four"]
    assert by_section_numbers(gap) == gap
    assert by_section_numbers(["### 2. Two", "### 1. One"]) == ["### 2. Two", "### 1. One"]
