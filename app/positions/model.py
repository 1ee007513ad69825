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

    @property
    def px_per_pt_xy(self) -> tuple[float, float]:
        """Pixels per point across and down."""
        down = self.height_px / self.height_pt if self.height_pt else 0.0
        return self.px_per_pt, down


@dataclass(frozen=True)
class Placed:
    """A word, a line or a model's block and its box; `line` numbers a word's line (words
    only), `category` says what a block is (a model's layout label: Title, Table, ...)."""

    text: str
    box: Box
    line: int | None = None
    category: str | None = None


def _scaled(box: Box, factor: tuple[float, float], digits: int) -> list[float]:
    x0, y0, x1, y1 = box
    fx, fy = factor
    return [
        round(x0 * fx, digits),
        round(y0 * fy, digits),
        round(x1 * fx, digits),
        round(y1 * fy, digits),
    ]


def _inverse(ratio: float) -> float:
    return 1 / ratio if ratio else 0.0


def positions_json(
    source: str,
    geometry: PageGeometry,
    words: Sequence[Placed],
    lines: Sequence[Placed],
    unit: str,
    blocks: Sequence[Placed] = (),
) -> dict[str, Any]:
    """The page JSON's `positions`: boxes read in `unit` ("pt" or "px") given in both; a
    model's blocks under `blocks` (only where a model placed them)."""
    # Each axis at its own scale: a model's image need not keep the page's aspect exactly.
    across, down = geometry.px_per_pt_xy
    same = (1.0, 1.0)
    to_pt = same if unit == "pt" else (_inverse(across), _inverse(down))
    to_px = (across, down) if unit == "pt" else same

    def entry(item: Placed) -> dict[str, Any]:
        placed: dict[str, Any] = {
            "text": item.text,
            "box_pt": _scaled(item.box, to_pt, 2),
            "box_px": _scaled(item.box, to_px, 1),
        }
        if item.line is not None:
            placed["line"] = item.line
        if item.category is not None:
            placed["category"] = item.category
        return placed

    found = {
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
    if blocks:
        found["blocks"] = [entry(block) for block in blocks]
    return found


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
