"""Plain Markdown answers (generic prompt, Nanonets-OCR2, LightOnOCR-2): kept as written.

Nanonets' semantic tags (<page_number>, <watermark>, <img>) stay: no official post-processor
removes them.
"""

from __future__ import annotations

from app.profiles.parsers.base import Parsed


def parse_markdown(text: str) -> Parsed:
    return Parsed(text.strip())
