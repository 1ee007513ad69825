"""RapidOCR as a page reader: lines found and read by PP-OCR models, laid out as paragraphs."""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

from PIL import Image

from app.scanread.reading import Reading
from app.textlayer.edges import running_lines
from app.textlayer.model import Box, PageLayout, TextLine
from app.textlayer.order import xy_cut
from app.textlayer.paragraphs import join_lines

MODEL = "rapidocr-3:pp-ocrv6-small"  # the detection and recognition models inside its wheel
PARAGRAPH_GAP = 0.6  # line heights: a wider gap between two lines starts a new paragraph


class RapidReader:
    """One RapidOCR engine per thread, each on one ONNX Runtime thread: Folio parallelises
    across pages, as it does for Tesseract."""

    def __init__(self) -> None:
        self._local = threading.local()

    @staticmethod
    def installed() -> bool:
        """Whether the [scan] extra is installed (found without importing it: ONNX Runtime and
        OpenCV take a second or two to import, paid only when a page is re-read)."""
        return all(importlib.util.find_spec(name) for name in ("rapidocr", "onnxruntime"))

    def _engine(self) -> Any:
        engine = getattr(self._local, "engine", None)
        if engine is None:
            from rapidocr import RapidOCR  # the [scan] extra

            params = {
                "Global.log_level": "error",  # not a line per model loaded or per blank page
                "EngineConfig.onnxruntime.intra_op_num_threads": 1,
                "EngineConfig.onnxruntime.inter_op_num_threads": 1,
            }
            engine = RapidOCR(params=params)
            self._local.engine = engine
        return engine

    def read(self, image: Image.Image) -> Reading:
        import numpy  # with the [scan] extra, which needs it

        output = self._engine()(numpy.asarray(image.convert("RGB")))
        scores = list(output.scores or ())
        boxes = [] if output.boxes is None else list(output.boxes)
        texts = list(output.txts or ())
        lines = [_line(box, text) for box, text in zip(boxes, texts, strict=True) if text.strip()]
        layout = PageLayout(float(image.width), float(image.height), lines)
        dropped = running_lines(layout, sizes_known=False)
        kept = [line for i, line in enumerate(lines) if i not in dropped]
        score = sum(scores) / len(scores) if scores else 0.0
        return Reading("\n\n".join(paragraphs(kept)), MODEL, score)


def _line(box: Any, text: str) -> TextLine:
    xs, ys = [float(p[0]) for p in box], [float(p[1]) for p in box]
    bounds = Box(min(xs), min(ys), max(xs), max(ys))
    return TextLine(text.strip(), bounds, bounds.height, False, 0)


def paragraphs(lines: list[TextLine]) -> list[str]:
    """Lines in reading order (`xy_cut`), joined into paragraphs where they follow closely."""
    if not lines:
        return []
    height = sorted(line.box.height for line in lines)[len(lines) // 2]
    ordered = xy_cut(lines, lambda line: line.box, 2.5 * height, min_gutter=0.8 * height)
    groups: list[list[TextLine]] = [[ordered[0]]]
    for line in ordered[1:]:
        last = groups[-1][-1]
        gap = line.box.y0 - last.box.y1
        beside = min(line.box.x1, last.box.x1) > max(line.box.x0, last.box.x0)
        if beside and -0.5 * height <= gap <= PARAGRAPH_GAP * height:
            groups[-1].append(line)
        else:
            groups.append([line])
    return [text for group in groups if (text := join_lines(line.text for line in group))]
