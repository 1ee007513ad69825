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


def _sideways_page() -> Image.Image:
    """A printed page scanned on its side: Tesseract (no orientation data) reads it poorly."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=200)
    for i, line in enumerate(LINES):
        page.insert_text((30, 60 + 30 * i), line, fontsize=14, fontname="helv")
    pixmap = page.get_pixmap(dpi=200, alpha=False)
    image = Image.frombytes("RGB", (pixmap.width, pixmap.height), pixmap.samples)
    return image.rotate(90, expand=True, fillcolor="white")


def test_a_page_tesseract_reads_poorly_is_read_by_rapidocr_where_installed() -> None:
    if importlib.util.find_spec("rapidocr") is None:
        if os.environ.get("FOLIO_REQUIRE_SERVICES"):  # CI installs the [scan] extra
            pytest.fail("rapidocr is not installed: the [scan] extra (make train-env)")
        pytest.skip("the [scan] extra is not installed")
    page = PageInput(_sideways_page(), "", False)
    step = PlanStep(name="ocr", engine="tesseract")

    alone = TesseractEngine(second_reader=None).transcribe(page, step)
    both = TesseractEngine().transcribe(page, step)

    assert "river authority" not in alone.text
    assert (alone.model or "").startswith("tesseract")
    assert "river authority" in both.text and "every district" in both.text
    assert (both.model or "").startswith("rapidocr")
