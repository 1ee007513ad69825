"""Synthetic page images for requests to the vLLM test server (needs Pillow)."""

from __future__ import annotations

import base64
import io

from PIL import Image, ImageDraw


def page_png(width: int = 1240, height: int = 1754) -> bytes:
    """A white page (A4 at 150 dpi by default) with lines of black text, as PNG bytes."""
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for y in range(100, height - 100, 40):
        draw.text((100, y), f"Line {y}: the quick brown fox jumps over the lazy dog.", fill="black")
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def page_image_data_url(width: int = 1240, height: int = 1754) -> str:
    return "data:image/png;base64," + base64.b64encode(page_png(width, height)).decode()
