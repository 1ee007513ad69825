"""Tesseract's output as a user reads it: paragraphs, and a blank page that is simply empty."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from app.domain import AttemptStatus, PageInput
from app.engines.tesseract import TesseractEngine
from app.pdf import samples
from app.pdf.render import render_page
from app.settings import PlanStep

STEP = PlanStep(name="tesseract", engine="tesseract")


def test_a_blank_page_is_empty_not_an_error() -> None:
    engine = TesseractEngine()
    try:
        result = engine.transcribe(
            PageInput(Image.new("RGB", (800, 1000), "white"), "", False), STEP
        )
    finally:
        engine.close()
    assert (result.status, result.text) == (AttemptStatus.EMPTY, "")


def test_a_scanned_page_comes_out_as_paragraphs(tmp_path: Path) -> None:
    text = samples.page_text(4, paragraphs=2)
    path = tmp_path / "scan.pdf"
    path.write_bytes(samples.scanned_pdf([text]))
    engine = TesseractEngine()
    try:
        result = engine.transcribe(
            PageInput(render_page(path, 1, 200, 2400).image, "", False), STEP
        )
    finally:
        engine.close()
    paragraphs = result.text.split("\n\n")
    assert len(paragraphs) == 3  # the heading and two paragraphs, each on one line
    assert all("\n" not in p for p in paragraphs)
    assert paragraphs[0] == "Section 4"
