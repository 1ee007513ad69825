"""Tables drawn without rulings come out of the text layer as Markdown tables; prose in
columns, lists and justified lines do not."""

from __future__ import annotations

import pymupdf
import pytest

from app.pdf import samples
from app.pdf.layout import read_layout
from app.textlayer import page_markdown
from app.textlayer.model import Box, PageLayout, TextLine
from tests.textlayer_pdfs import borderless_pdf

INTRO = "Flow in March at the three gates, measured every morning by the lock keeper."


def markdown_of(data: bytes) -> str:
    return page_markdown(read_layout(pymupdf.open("pdf", data), 0))


def test_aligned_columns_of_short_cells_are_a_table() -> None:
    rows = [
        ["Station", "Flow", "Level"],
        ["North gate", "12.4", "3.1"],
        ["South gate", "9.8", "2.7"],
        ["East bank", "15.0", "3.9"],
    ]
    markdown = markdown_of(borderless_pdf(rows, INTRO, [72, 250, 400]))
    assert (
        "| Station | Flow | Level |\n| --- | --- | --- |\n| North gate | 12.4 | 3.1 |\n"
        "| South gate | 9.8 | 2.7 |\n| East bank | 15.0 | 3.9 |"
    ) in markdown
    assert markdown.startswith(INTRO)
    assert markdown.rstrip().endswith("The figures above are provisional.")


def test_an_infobox_of_labels_and_values_is_a_table_with_wrapped_values() -> None:
    info = [
        ["Born", "12 May 1820"],
        ["Died", "3 June 1901"],
        ["Spouses", "Anna Berg"],
        ["", "Clara Holt"],
        ["Known for", "Flood maps"],
    ]
    markdown = markdown_of(borderless_pdf(info, "Johan Lind was a surveyor.", [350, 430]))
    assert (
        "| Born | 12 May 1820 |\n| --- | --- |\n| Died | 3 June 1901 |\n"
        "| Spouses | Anna Berg |\n|  | Clara Holt |\n| Known for | Flood maps |"
    ) in markdown


@pytest.mark.parametrize(
    "rows",
    [
        [["•", "Open the north gate"], ["•", "Check the level"], ["•", "Close it at dusk"]],
        [["1.", "Open the north gate"], ["2.", "Check the level"], ["3.", "Close it at dusk"]],
        [["Open the north gate", "Check"]],  # one row is no table
    ],
)
def test_lists_and_single_rows_are_not_tables(rows: list[list[str]]) -> None:
    assert "|" not in markdown_of(borderless_pdf(rows, INTRO, [72, 100]))


def two_column_page() -> bytes:
    """Prose in two narrow columns: lines side by side with a column gap between them."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    text = " ".join(samples.page_text(n).replace("\n", " ") for n in (1, 2))
    page.insert_textbox(pymupdf.Rect(72, 72, 290, 700), text, fontsize=10, align=3)
    page.insert_textbox(pymupdf.Rect(320, 72, 540, 700), text[::-1][:1500][::-1], fontsize=10)
    return bytes(doc.tobytes(garbage=3, deflate=True))


def test_prose_in_two_columns_is_not_a_table() -> None:
    markdown = markdown_of(two_column_page())
    assert "|" not in markdown
    assert len(markdown) > 1000


def test_amounts_split_between_a_currency_column_and_their_own_are_one_column() -> None:
    from app.textlayer.tables import table_markdown

    rows = [
        ["Item", "", "2025", "", "2024"],
        ["Cost", "$", "178", "$", "141"],
        ["R&D", "3,423", "", "2,532", ""],
    ]
    assert table_markdown(rows).splitlines() == [
        "| Item | 2025 | 2024 |",
        "| --- | --- | --- |",
        "| Cost | $178 | $141 |",
        "| R&D | 3,423 | 2,532 |",
    ]


def _line(text: str, x: float, y: float, block: int) -> TextLine:
    return TextLine(text, Box(x, y, x + 5.5 * len(text), y + 10), size=10, bold=False, block=block)


def _page(lines: list[TextLine]) -> str:
    return page_markdown(PageLayout(width=612, height=792, lines=lines))


def test_a_table_whose_cells_are_blocks_of_their_own_is_a_table() -> None:
    """MuPDF often cuts a borderless table into a block per cell or two (a clinic's schedule
    in the shared corpus' pdftotext_two_column_issue): rows are read across the blocks."""
    rows = [["Auxology", "Height", "Weight"], ["Bone", "Scoliosis", "DXA scan"]]
    rows += [["Renal", "Ultrasound", "Urine culture"], ["Liver", "Liver function", "None"]]
    lines = [
        _line(cell, x, 100 + 14 * r, block=3 * r + c)
        for r, row in enumerate(rows)
        for c, (x, cell) in enumerate(zip((72, 200, 330), row, strict=True))
    ]
    assert _page(lines).splitlines() == [
        "| Auxology | Height | Weight |",
        "| --- | --- | --- |",
        "| Bone | Scoliosis | DXA scan |",
        "| Renal | Ultrasound | Urine culture |",
        "| Liver | Liver function | None |",
    ]


def test_two_columns_of_an_index_each_one_block_are_not_a_table() -> None:
    """Short lines side by side in two long blocks (an index's columns) stay lines."""
    entries = [f"Entry {n}, {n * 7}" for n in range(12)]
    lines = [_line(text, 72, 100 + 12 * n, block=0) for n, text in enumerate(entries)]
    lines += [_line(text, 330, 100 + 12 * n, block=1) for n, text in enumerate(entries)]
    assert "|" not in _page(lines)


def test_a_header_over_the_values_with_an_empty_stub_heads_the_table() -> None:
    rows = [["", "Childhood", "Adult"], ["Auxology", "Height", "Weight"]]
    rows += [["Bone", "Scoliosis", "DXA scan"], ["Renal", "Ultrasound", "Urine culture"]]
    lines = [
        _line(cell, x, 100 + 14 * r, block=r)
        for r, row in enumerate(rows)
        for x, cell in zip((72, 200, 330), row, strict=True)
        if cell
    ]
    assert _page(lines).splitlines()[:3] == [
        "|  | Childhood | Adult |",
        "| --- | --- | --- |",
        "| Auxology | Height | Weight |",
    ]


def test_justified_columns_whose_every_line_is_a_block_are_not_a_table() -> None:
    """Two columns of prose, each line a block of its own and under 40 characters (Korean
    sets about 25 to a line), flush at both edges: prose, not a table of one-line cells."""
    lines = [
        _line(
            f"line {n:02d} of column {side} goes on and on"[:30], x, 100 + 14 * n, block=2 * n + c
        )
        for n in range(10)
        for c, (x, side) in enumerate(((72, "A"), (330, "B")))
    ]
    assert "|" not in _page(lines)
