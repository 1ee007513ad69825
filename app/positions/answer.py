"""A model's own boxes as positions: blocks a VLM answer placed on the page (DeepSeek's
grounding, dots.ocr's layout cells, DocTags' locations), from the answer's units to pixels of
the image sent and to PDF points; pure arithmetic, no model or profile objects.

The answer counts its boxes on a frame of `frame` units (a 0-999 grid, or the pixels of the
image as the server resized it) laid over the image sent; the image sent covers the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.positions.model import Box, PageGeometry, Placed, positions_json


def frame_to_pixels(box: Box, frame: tuple[float, float], sent: tuple[int, int]) -> Box:
    """A box counted on a `frame` (width, height) as pixels of the image sent, clamped to it
    (a model's box may overshoot the edge by a unit)."""
    scale_x, scale_y = sent[0] / frame[0], sent[1] / frame[1]
    x0, y0, x1, y1 = box
    return (
        min(max(x0 * scale_x, 0.0), sent[0]),
        min(max(y0 * scale_y, 0.0), sent[1]),
        min(max(x1 * scale_x, 0.0), sent[0]),
        min(max(y1 * scale_y, 0.0), sent[1]),
    )


def answer_positions(
    source: str,
    blocks: Sequence[Placed],
    frame: tuple[float, float],
    sent: tuple[int, int],
    page_pt: tuple[float, float],
) -> dict[str, Any] | None:
    """The page JSON's `positions` for a model's blocks: boxes in pixels of the image sent
    (`page.width_px/height_px` are its size) and in PDF points; None without a block."""
    if not blocks or min(frame) <= 0 or min(sent) <= 0 or min(page_pt) <= 0:
        return None
    geometry = PageGeometry(page_pt[0], page_pt[1], sent[0], sent[1])
    placed = [
        Placed(b.text, frame_to_pixels(b.box, frame, sent), category=b.category) for b in blocks
    ]
    return positions_json(source, geometry, [], [], "px", placed)
