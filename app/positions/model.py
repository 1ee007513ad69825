"""Word and line boxes as the page JSON gives them: each in PDF points (origin top left, 1/72
inch) and in the pixels of the page as rendered for OCR; pure, no PDF or OCR objects.

An engine reads its boxes in one unit (the text layer in points, Tesseract in pixels) and the
page's geometry turns them into the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Box = tuple[float, float, float, float]  # x0, y0, x1, y1


@dataclass(frozen=True)
class PageGeometry:
    """A page's size in points (the PDF's) and in pixels (the rendered image's)."""

    width_pt: float
    height_pt: float
    width_px: int
    height_px: int

    @property
    def px_per_pt(self) -> float:
        return self.width_px / self.width_pt if self.width_pt else 0.0


@dataclass(frozen=True)
class Placed:
    """A word or a line and its box; `line` numbers a word's line (words only)."""

    text: str
    box: Box
    line: int | None = None


def _scaled(box: Box, factor: float, digits: int) -> list[float]:
    return [round(v * factor, digits) for v in box]


def positions_json(
    source: str,
    geometry: PageGeometry,
    words: Sequence[Placed],
    lines: Sequence[Placed],
    unit: str,
) -> dict[str, Any]:
    """The page JSON's `positions`: boxes read in `unit` ("pt" or "px") given in both."""
    ratio = geometry.px_per_pt
    to_pt = 1.0 if unit == "pt" else (1 / ratio if ratio else 0.0)
    to_px = ratio if unit == "pt" else 1.0

    def entry(item: Placed) -> dict[str, Any]:
        placed: dict[str, Any] = {
            "text": item.text,
            "box_pt": _scaled(item.box, to_pt, 2),
            "box_px": _scaled(item.box, to_px, 1),
        }
        if item.line is not None:
            placed["line"] = item.line
        return placed

    return {
        "source": source,
        "page": {
            "width_pt": round(geometry.width_pt, 2),
            "height_pt": round(geometry.height_pt, 2),
            "width_px": geometry.width_px,
            "height_px": geometry.height_px,
        },
        "lines": [entry(line) for line in lines],
        "words": [entry(word) for word in words],
    }


def lines_of(words: Sequence[Placed]) -> list[Placed]:
    """Lines from words numbered by line: their text joined, their boxes' union."""
    grouped: dict[int, list[Placed]] = {}
    for word in words:
        grouped.setdefault(word.line or 0, []).append(word)
    lines = []
    for members in grouped.values():
        box = (
            min(w.box[0] for w in members),
            min(w.box[1] for w in members),
            max(w.box[2] for w in members),
            max(w.box[3] for w in members),
        )
        lines.append(Placed(" ".join(w.text for w in members), box))
    return lines
