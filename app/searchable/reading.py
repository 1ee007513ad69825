"""Where the words are on a page whose kept text came with no word boxes (a model's reading,
RapidOCR's): Tesseract's words on the page rendered at Folio's DPI, in points."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.engines.tesseract import TesseractEngine
from app.pdf.render import rasterize
from app.searchable.align import FoundWord


class TesseractWords:
    """Tesseract's words of a page; its engine made on the first page that needs it (one
    API per thread), closed with `close`."""

    def __init__(self, engine: Callable[[], TesseractEngine], dpi: int) -> None:
        self._make = engine
        self._engine: TesseractEngine | None = None
        self.dpi = dpi

    def read(self, path: Path, number: int, size_pt: tuple[float, float]) -> list[FoundWord]:
        if self._engine is None:
            self._engine = self._make()
        image = rasterize(path, number, self.dpi)
        across, down = size_pt[0] / image.width, size_pt[1] / image.height
        return [
            FoundWord(
                w.text,
                (w.box[0] * across, w.box[1] * down, w.box[2] * across, w.box[3] * down),
                w.line or 0,
            )
            for w in self._engine.words(image)
        ]

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
