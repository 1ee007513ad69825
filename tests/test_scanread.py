"""The second reader for scans: asked only where Tesseract reads a page poorly, kept when sure."""

from __future__ import annotations

import importlib.util
import os

import pymupdf
import pytest
from PIL import Image

from app.domain import PageInput
from app.engines.tesseract import TesseractEngine
from app.scanread.choice import keep_second, needs_second_reading
from app.settings import PlanStep

LINES = ["Quarterly report of the river authority", "Water levels rose in every district"]


@pytest.mark.parametrize(
    ("confidence", "asked"), [(95, False), (82, False), (70, False), (61, True), (30, True)]
)
def test_a_second_reading_is_asked_only_for_a_poorly_read_page(
    confidence: int, asked: bool
) -> None:
    assert needs_second_reading(confidence) is asked


@pytest.mark.parametrize(
    ("text", "score", "kept"),
    [("Master Bath", 0.86, True), ("Master Bath", 0.5, False), ("", 1.0, False)],
)
def test_the_second_reading_is_kept_when_its_reader_is_sure(
    text: str, score: float, kept: bool
) -> None:
    assert keep_second(text, score) is kept


def _printed_page(dpi: int = 200) -> Image.Image:
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=200)
    for i, line in enumerate(LINES):
        page.insert_text((30, 60 + 30 * i), line, fontsize=14, fontname="helv")
    pixmap = page.get_pixmap(dpi=dpi, alpha=False)
    return Image.frombytes("RGB", (pixmap.width, pixmap.height), pixmap.samples)


@pytest.mark.parametrize("degrees", [90, 270])
def test_a_page_scanned_on_its_side_is_read_upright_by_tesseract(degrees: int) -> None:
    """Read as it lies, the page is gibberish at a confidence of about 30; Tesseract's
    orientation detection turns it upright and the second reading is kept."""
    page = PageInput(_printed_page().rotate(degrees, expand=True, fillcolor="white"), "", False)
    engine = TesseractEngine(second_reader=None)
    try:
        result = engine.transcribe(page, PlanStep(name="ocr", engine="tesseract"))
    finally:
        engine.close()
    assert "river authority" in result.text and "every district" in result.text
    assert result.positions is None  # the words' boxes would be the turned image's


def test_a_page_tesseract_reads_poorly_is_read_by_rapidocr_where_installed() -> None:
    if importlib.util.find_spec("rapidocr") is None:
        if os.environ.get("FOLIO_REQUIRE_SERVICES"):  # CI installs the [scan] extra
            pytest.fail("rapidocr is not installed: the [scan] extra (make train-env)")
        pytest.skip("the [scan] extra is not installed")
    # scanned at 45 DPI: Tesseract reads it at a confidence of about 40 ("Quatry pat of herve")
    page = PageInput(_printed_page(dpi=45), "", False)
    step = PlanStep(name="ocr", engine="tesseract")

    alone = TesseractEngine(second_reader=None).transcribe(page, step)
    both = TesseractEngine().transcribe(page, step)

    assert "river authority" not in alone.text
    assert (alone.model or "").startswith("tesseract")
    assert "river authority" in both.text and "every district" in both.text
    assert (both.model or "").startswith("rapidocr")
