"""Where a kept word lands, as a table: the kept words, the words another reader found (with
boxes), and the box each kept word gets. Pure: no PDF, no OCR."""

from __future__ import annotations

import pytest

from app.searchable.align import FoundWord, place
from app.searchable.layer import drawn, runs
from app.searchable.words import layer_text, tokens


def found(*words: str, line: int = 0, y: float = 0.0) -> list[FoundWord]:
    """Words 10 points wide with 5 between them, on one line."""
    return [FoundWord(w, (15.0 * i, y, 15.0 * i + 10, y + 10), line) for i, w in enumerate(words)]


CASES = [
    # (kept text, found words, the x0 of each kept word's box)
    ("the quick fox", found("the", "quick", "fox"), [0, 15, 30]),
    # read right by the model, wrong by Tesseract: lands on Tesseract's word all the same
    ("the quick fox", found("tbe", "qnick", "fox"), [0, 15, 30]),
    # Tesseract's extra word (a smudge) is passed over
    ("the fox", found("the", "~", "fox"), [0, 30]),
    # two words Tesseract read as one: both within its box, by their lengths
    ("to day", found("today"), [0, 5.0]),
]


@pytest.mark.parametrize(("kept", "words", "starts"), CASES)
def test_kept_words_land_on_the_found_words(
    kept: str, words: list[FoundWord], starts: list[float]
) -> None:
    placed = place(tokens(kept), words)
    assert [p.token.text for p in placed] == kept.split()
    assert [round(p.box[0], 2) for p in placed] == starts


def test_a_block_read_in_another_order_is_found_where_it_is() -> None:
    """The model reads the caption last, Tesseract first: each word still gets its own box."""
    top = found("Figure", "seven", "nuts", line=0, y=0)
    body = found("The", "two", "general", "types", "of", "locking", "nuts", line=1, y=20)
    placed = place(tokens("The two general types of locking nuts Figure seven nuts"), top + body)
    boxes = {(p.token.text, p.line) for p in placed}
    assert ("Figure", 0) in boxes and ("seven", 0) in boxes and ("general", 1) in boxes
    assert [p.token.text for p in placed][-3:] == ["Figure", "seven", "nuts"]


def test_words_no_reader_found_go_after_the_word_before_them() -> None:
    placed = place(tokens("alpha beta gamma delta"), found("alpha", "delta"))
    alpha, beta, gamma, delta = placed
    assert alpha.box[2] <= beta.box[0] < beta.box[2] <= gamma.box[0] < gamma.box[2] <= delta.box[0]


def test_nothing_found_places_nothing() -> None:
    assert place(tokens("words without boxes"), []) == []


def test_markup_is_not_in_the_layer() -> None:
    markdown = (
        "---\nprimary_language: en\nis_table: true\n---\n# Title\n\n"
        "Some **bold** and _it_ text, a [link](http://x.org) and ![a figure](f.png).\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n- item one\n> quoted <br> line\n<!-- note -->"
    )
    expected = "Title Some bold and it text, a link and . a b 1 2 item one quoted line"
    assert layer_text(markdown).split() == expected.split()


def test_cjk_characters_are_words_of_their_own_joined_in_one_run() -> None:
    kept = tokens("中文句子 ok")
    assert [t.text for t in kept] == ["中", "文", "句", "子", "ok"]
    assert [t.joined for t in kept] == [False, True, True, True, False]
    placed = place(kept, found("中文句子", "ok"))
    written = runs(placed, {0: (0.0, 0.0, 25.0, 10.0)})
    assert [r.text for r in written] == ["中文句子 ", "ok"]


def test_a_right_to_left_run_is_drawn_in_visual_order() -> None:
    assert drawn("שלום ") == " םולש"
    assert drawn("hello ") == "hello "
