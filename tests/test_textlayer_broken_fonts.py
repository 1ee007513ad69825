"""The text-layer gate on layers broken by their fonts: refused, and the page goes to OCR.

The broken layers are real PDFs whose pages draw the right glyphs while the font's ToUnicode
map (what every extractor reads) is wrong, the way broken fonts in the wild are: a glyph that
maps to a space (`Spee h`) or to another character (`SecOion`), a ligature-like glyph followed
by a gap (`Platf orm f or`), glyphs that each carry a space (`S p e e c h`). Healthy pages are
the shared corpus's born-digital PDFs (skipped when the corpus is absent).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pymupdf
import pytest

from app.pdf import samples
from app.pdf.layout import read_layout
from app.textlayer import GateConfig, rejection
from app.textlayer.model import Box, PageLayout, TextLine
from app.textlayer.splits import split_report
from app.textlayer.words import languages_for
from tests.test_textlayer import one_pdf, run_folder
from tests.textlayer_pdfs import broken_font_pdf

GATE = GateConfig(languages_for("eng"))
PAGE = " ".join(samples.page_text(n).replace("\n", " ") for n in range(1, 5))
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def layer_of(data: bytes) -> PageLayout:
    return read_layout(pymupdf.open("pdf", data), 0)


BROKEN = {
    "a letter read as a gap": {"c": " "},
    "another letter read as a gap": {"h": " "},
    "a letter read as another": {"c": "o"},
    "a ligature glyph read as a capital": {"t": "O"},
    "a letter read as an invisible mark": {"c": "\u200b"},
    "a gap after every f": {"f": "f "},
    "a gap after every letter": {ch: ch + " " for ch in LETTERS},
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_layer_broken_by_its_font_is_refused(name: str) -> None:
    layout = layer_of(broken_font_pdf(PAGE, BROKEN[name]))
    assert rejection(layout, GATE) == "broken_words", layout.text[:120]


def test_the_same_page_with_a_sound_font_is_accepted() -> None:
    assert rejection(layer_of(broken_font_pdf(PAGE, {})), GATE) is None


def _layout(text: str) -> PageLayout:
    lines = [
        TextLine(line, Box(72, 100 + 14 * i, 540, 112 + 14 * i), 11.0, False, i)
        for i, line in enumerate(text.split("\n"))
    ]
    return PageLayout(612, 792, lines)


@pytest.mark.parametrize("glued", [2, 3, 4])
def test_words_run_together_are_refused(glued: int) -> None:
    words = PAGE.split()
    text = " ".join("".join(words[i : i + glued]) for i in range(0, len(words), glued))
    # Too few known words already ("garbled"); the glued words are counted besides.
    assert rejection(_layout(text), GATE) is not None
    if glued >= 3:
        assert split_report(text, GATE.languages).glued >= len(words) // glued // 3


@pytest.mark.parametrize(
    "healthy",
    [
        # Formulas: single letters that join into no word, each repaired by another glyph.
        "Let s be the distance and t the time, so that v is s over t and a is v over t. " * 6,
        # Names and terms one letter off a word, each off by another letter.
        "Aleksandar and Jaroslav measured lymphedema, malrotations and eustachian tubes "
        "with Bainbridge in the Vandermeer clinic near Szczecin and Wrocław last spring. " * 4,
        # Compounds glue content words, not function words.
        "Die Fundamentalgruppe und die Überlagerungen der Topologische Grundbegriffe "
        "werden in den Übungsaufgaben zur Differentialgeometrie behandelt. " * 4,
    ],
)
def test_formulas_names_and_compounds_are_not_broken_words(healthy: str) -> None:
    assert rejection(_layout(healthy), GATE) != "broken_words"


def _corpus_pdfs() -> Path:
    shared = os.environ.get("FOLIO_SHARED_DIR")
    root = Path(shared) if shared else Path(__file__).resolve().parents[1].parent / "shared"
    return root / "corpus" / "pdfs"


@pytest.mark.corpus
def test_no_page_of_the_corpus_pdfs_is_refused_as_broken_words() -> None:
    folder = _corpus_pdfs()
    if not (folder / "manifest.jsonl").is_file():
        pytest.skip(f"corpus PDFs not found at {folder}")
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    judged = 0
    for row in rows:
        if not row.get("has_text_layer"):
            continue
        doc = pymupdf.open(folder / row["file"])
        for index in range(min(len(doc), 3)):
            reason = rejection(read_layout(doc, index), GATE)
            assert reason != "broken_words", (row["file"], index)
            judged += 1
    assert judged >= 40


def test_a_layer_that_drops_a_letter_goes_to_ocr(sqlite_url: str, tmp_path: Path) -> None:
    folder = one_pdf(tmp_path, broken_font_pdf(PAGE, {"c": " "}))
    document, attempts = run_folder(sqlite_url, folder)

    page = document.pages[0]
    assert [(a.engine, a.status) for a in attempts] == [
        ("textlayer", "rejected"),
        ("tesseract", "ok"),
    ]
    assert attempts[0].error == "textlayer_rejected: broken_words"
    assert (page.engine, page.status) == ("tesseract", "fallback")
    assert "Section" in (page.text or "") and "Se tion" not in (page.text or "")


RECORDED = Path(__file__).resolve().parent / "data"


def test_a_real_layer_that_spells_words_out_is_refused() -> None:
    # A scanner's OCR layer from pypdf's test files (origin and licence: tests/data/README.md).
    # It is invisible over the page's scan, so Folio reads the page as the scan it is (issue
    # 62); read as if it were seen, the gate still refuses its spelled-out words.
    doc = pymupdf.open(RECORDED / "pypdf-indirect-rotation-p2.pdf")
    assert read_layout(doc, 0).lines == []
    raw = doc[0].get_text("dict")["blocks"]
    lines = [
        TextLine("".join(s["text"] for s in line["spans"]), Box(*line["bbox"]), 10.0, False, n)
        for n, block in enumerate(raw)
        for line in block.get("lines", ())
    ]
    layout = PageLayout(doc[0].rect.width, doc[0].rect.height, lines)
    assert "C o m p a n i a" in layout.text
    assert rejection(layout, GATE) == "broken_words"
