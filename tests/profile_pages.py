"""Three page shapes for profile tests, and a page that renders again at any DPI the way
`app.pdf.render.rasterize` does (a blank image of the size MuPDF would give)."""

from __future__ import annotations

from PIL import Image

from app.domain import PageInput
from app.profiles.sizing import rendered_size

LETTER = (612.0, 792.0)  # US Letter portrait, PDF points
A4_LANDSCAPE = (842.0, 595.0)
SMALL_SCAN = (300, 400)  # an image with no PDF page behind it (pixels)


def pdf_page(points: tuple[float, float], first_dpi: int = 200) -> PageInput:
    """A PDF page rendered first at `first_dpi`, which a model may ask to render again."""

    def render_at(dpi: float) -> Image.Image:
        return Image.new("RGB", rendered_size(*points, dpi), "white")

    return PageInput(render_at(first_dpi), "", False, points=points, render_at=render_at)


def scan_page() -> PageInput:
    return PageInput(Image.new("RGB", SMALL_SCAN, "white"), "", False)


SHAPES = {"letter": pdf_page(LETTER), "a4-landscape": pdf_page(A4_LANDSCAPE), "scan": scan_page()}
