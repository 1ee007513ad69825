"""Image size arithmetic: each model's official rule as a pure function of the page size.

A page is rendered at the DPI that gives the model's size directly (olmOCR renders with
`pdftoppm -r 1288*72/longest`; dots.ocr at 200 DPI), not shrunk from some other render.
"""

from __future__ import annotations

import math

from app.profiles.model import BoxFrame, ImageRule

POINTS_PER_INCH = 72.0


def render_dpi(rule: ImageRule, width_pt: float, height_pt: float) -> float:
    """The DPI to rasterise a page of this size (PDF points) at, for this rule."""
    if rule.rule == "longest":
        return rule.value * POINTS_PER_INCH / max(width_pt, height_pt)
    if rule.rule == "shortest":
        return rule.value * POINTS_PER_INCH / min(width_pt, height_pt)
    if rule.rule == "dpi":
        limit = rule.max_side_fallback
        if limit and max(width_pt, height_pt) * rule.value / POINTS_PER_INCH > limit:
            return POINTS_PER_INCH  # dots.ocr: a page over 4500 px re-renders at 72 DPI
        return float(rule.value)
    dpi = float(rule.render_dpi or 0)
    if rule.min_short_side:
        dpi = max(dpi, rule.min_short_side * POINTS_PER_INCH / min(width_pt, height_pt))
    if not dpi:  # a pure budget: render at the budget's own size
        dpi = POINTS_PER_INCH * math.sqrt(rule.value / (width_pt * height_pt))
    return dpi


def rendered_size(width_pt: float, height_pt: float, dpi: float) -> tuple[int, int]:
    """Pixels of a page rendered at `dpi` (MuPDF rounds each side to the nearest pixel)."""
    zoom = dpi / POINTS_PER_INCH
    return max(1, round(width_pt * zoom)), max(1, round(height_pt * zoom))


def target_size(rule: ImageRule, width: int, height: int) -> tuple[int, int]:
    """The size the model gets, from an image of `width` x `height` pixels."""
    if rule.rule in ("longest", "shortest"):
        side = max(width, height) if rule.rule == "longest" else min(width, height)
        scale = rule.value / side
        return max(1, round(width * scale)), max(1, round(height * scale))
    if rule.rule == "dpi":
        return width, height
    if rule.factor:
        height_px, width_px = smart_resize(
            height, width, rule.factor, rule.min_pixels or rule.factor**2, rule.value
        )
        return width_px, height_px
    return scale_to_fit(width, height, rule.value, rule.min_pixels or 28 * 28)


def page_target(rule: ImageRule, width_pt: float, height_pt: float) -> tuple[int, int]:
    """The size the model gets for a PDF page of this size in points."""
    width, height = rendered_size(width_pt, height_pt, render_dpi(rule, width_pt, height_pt))
    return target_size(rule, width, height)


def scale_to_fit(width: int, height: int, max_pixels: int, min_pixels: int) -> tuple[int, int]:
    """Chandra's `scale_to_fit` (chandra/model/util.py:9-42): keep within a pixel budget."""
    pixels = width * height
    if pixels > max_pixels:
        scale = math.sqrt(max_pixels / pixels)
        return math.floor(width * scale), math.floor(height * scale)
    if pixels < min_pixels:
        scale = math.sqrt(min_pixels / pixels)
        return math.ceil(width * scale), math.ceil(height * scale)
    return width, height


def smart_resize(
    height: int, width: int, factor: int, min_pixels: int, max_pixels: int
) -> tuple[int, int]:
    """Qwen2-VL's `smart_resize` (qwen_vl_utils): sides on the grid, pixels within bounds."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def box_frame_size(frame: BoxFrame, width: int, height: int) -> tuple[float, float]:
    """The (width, height) an answer counts its boxes in, for an image sent of this size:
    the grid (DeepSeek's `x / 999 * image_width`), the server's smart_resize of the image
    (dots.ocr's `post_process_cells`), or the image itself."""
    if frame.scale:
        return float(frame.scale), float(frame.scale)
    if frame.factor:
        resized_h, resized_w = smart_resize(
            height, width, frame.factor, frame.min_pixels, frame.max_pixels
        )
        return float(resized_w), float(resized_h)
    return float(width), float(height)
