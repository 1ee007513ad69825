"""Reading order of text-layer blocks: columns, gutters and the items that span them."""

from __future__ import annotations

from app.textlayer import page_markdown
from app.textlayer.model import Box, PageLayout, TextLine
from app.textlayer.order import xy_cut


def _line(text: str, x0: float, y0: float, x1: float, block: int) -> TextLine:
    return TextLine(text, Box(x0, y0, x1, y0 + 10), 10.0, False, block)


def test_a_left_column_wider_than_half_the_page_is_read_before_the_right_one() -> None:
    lines = [
        _line("A Title Across Both Columns Of The Page", 70, 60, 540, 0),
        _line("The left column begins here and its text", 70, 100, 350, 1),
        _line("runs past the middle of the page.", 70, 112, 350, 1),
        _line("its second paragraph, which ends with a", 70, 130, 350, 2),
        _line("sentence that the right column finishes.", 362, 100, 540, 3),
        _line("The right column's own second paragraph.", 362, 118, 540, 4),
    ]
    markdown = page_markdown(PageLayout(612, 792, lines))
    paragraphs = markdown.split("\n\n")
    assert paragraphs[1].startswith("The left column begins here")
    assert paragraphs[2] == (
        "its second paragraph, which ends with a sentence that the right column finishes."
    )
    assert paragraphs[3] == "The right column's own second paragraph."


def test_a_full_width_item_parts_the_columns_above_it_from_those_below() -> None:
    boxes = {
        "top left": Box(70, 100, 290, 200),
        "top right": Box(320, 100, 540, 200),
        "figure": Box(70, 220, 540, 400),
        "bottom left": Box(70, 420, 290, 700),
        "bottom right": Box(320, 420, 540, 700),
    }
    order = xy_cut(list(boxes), lambda name: boxes[name], 30.0)
    assert order == ["top left", "top right", "figure", "bottom left", "bottom right"]


def test_paragraph_gaps_that_line_up_across_columns_do_not_cut_the_columns() -> None:
    boxes = {
        "left 1": Box(70, 100, 290, 200),
        "left 2": Box(70, 210, 290, 300),
        "right 1": Box(320, 100, 540, 200),
        "right 2": Box(320, 210, 540, 300),
    }
    order = xy_cut(list(boxes), lambda name: boxes[name], 30.0)
    assert order == ["left 1", "left 2", "right 1", "right 2"]
