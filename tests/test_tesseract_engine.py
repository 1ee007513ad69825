"""Tesseract on pages a scan batch really holds: a blank page is an empty answer, not an error."""

from __future__ import annotations

from PIL import Image

from app.domain import AttemptStatus, PageInput
from app.engines.tesseract import TesseractEngine
from app.settings import PlanStep

STEP = PlanStep(name="tesseract", engine="tesseract")


def test_blank_page_is_empty_not_an_engine_failure() -> None:
    engine = TesseractEngine("eng")
    try:
        result = engine.transcribe(
            PageInput(Image.new("RGB", (850, 1100), "white"), "", False), STEP
        )
    finally:
        engine.close()
    assert result.status is AttemptStatus.EMPTY
    assert result.text == ""
