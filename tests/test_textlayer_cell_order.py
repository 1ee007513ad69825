"""Table cells and lines read in the order the PDF writes them: Arabic and Persian text,
identifiers whose underscores the table finder moves, lam-alef ligatures mapped backwards."""

from __future__ import annotations

from typing import Any

import pymupdf
import pytest

from app.pdf.layout import _ligatures_in_order, read_tables

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # Debian's fonts-dejavu-core
ROWS = [("نام", "20300"), ("شماره", "436"), ("تاريخ", "1403")]


def _table_pdf() -> pymupdf.Document:
    """A ruled table whose right column holds Persian words, their glyphs written right to
    left as a PDF from a word processor writes them (reading order in the stream, x falling)."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    font = pymupdf.Font(fontfile=FONT)
    for i in range(4):
        page.draw_line((50, 50 + 30 * i), (350, 50 + 30 * i))
    for x in (50, 200, 350):
        page.draw_line((x, 50), (x, 140))
    for i, (word, number) in enumerate(ROWS):
        writer, x = pymupdf.TextWriter(page.rect), 340.0
        for char in word:
            x -= font.text_length(char, fontsize=12)
            writer.append((x, 70 + 30 * i), char, font=font, fontsize=12)
        writer.write_text(page)
        page.insert_text((60, 70 + 30 * i), number, fontsize=12)
    return pymupdf.open(stream=doc.tobytes())


def test_a_table_cell_in_persian_reads_in_its_writing_order() -> None:
    try:
        doc = _table_pdf()
    except RuntimeError:
        pytest.skip(f"no Arabic-script font at {FONT}")
    page = doc[0]
    # PyMuPDF's table finder orders a cell's glyphs left to right: "نام" comes out "مان"
    assert page.find_tables().tables[0].extract()[0][1] == "مان"
    (grid,) = read_tables(page)
    assert grid.rows == [[number, word] for word, number in ROWS]


def _char(c: str, x0: float, x1: float) -> dict[str, Any]:
    return {"c": c, "bbox": (x0, 72.5, x1, 87.5)}


def test_a_lam_alef_ligature_mapped_alef_first_is_read_lam_first() -> None:
    # From an Arabic PDF written by Word: "خلال" as خ, a weightless alef, the ligature's lam, ل
    chars = [_char("خ", 358.9, 366.0), _char("ا", 359.0, 359.0)]
    chars += [_char("ل", 351.6, 359.0), _char("ل", 345.5, 351.6)]
    assert "".join(c["c"] for c in _ligatures_in_order(chars)) == "خلال"
    # "الإنتاجية" begins alef, a weightless alef with hamza below, lam
    chars = [_char("ا", 485.7, 488.7), _char("إ", 485.8, 485.8), _char("ل", 479.2, 485.8)]
    assert "".join(c["c"] for c in _ligatures_in_order(chars)) == "الإ"
    # an alef with a width of its own is a letter of its own: "ال" stays as written
    chars = [_char("ا", 423.4, 426.3), _char("ل", 420.3, 423.4)]
    assert "".join(c["c"] for c in _ligatures_in_order(chars)) == "ال"


def test_an_identifier_with_underscores_in_a_table_cell_stays_whole() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=200)
    for i in range(3):
        page.draw_line((50, 50 + 30 * i), (350, 50 + 30 * i))
    for x in (50, 200, 350):
        page.draw_line((x, 50), (x, 110))
    for i, (name, kind) in enumerate([("USER_NAME", "VARCHAR(10)"), ("CLIENT_HOST", "INTEGER")]):
        page.insert_text((60, 70 + 30 * i), name, fontsize=12, fontname="cour")
        page.insert_text((210, 70 + 30 * i), kind, fontsize=12, fontname="helv")
    page = pymupdf.open(stream=doc.tobytes())[0]
    # the finder sets the underscore, below the baseline, on a line of its own
    assert page.find_tables().tables[0].extract()[0][0] == "USER NAME\n_"
    (grid,) = read_tables(page)
    assert grid.rows == [["USER_NAME", "VARCHAR(10)"], ["CLIENT_HOST", "INTEGER"]]
