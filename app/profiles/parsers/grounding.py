"""DeepSeek-OCR's grounding answer: Markdown with `<|ref|>label<|/ref|><|det|>[[...]]<|/det|>`
pairs, post-processed as `run_dpsk_ocr_pdf.py:123-135, 286-320` does
(deepseek-ai/DeepSeek-OCR@e4ac34e1): image refs become links, other pairs are deleted."""

from __future__ import annotations

import re

from app.profiles.parsers.base import Parsed

_REF = re.compile(r"<\|ref\|>(.*?)<\|/ref\|><\|det\|>(.*?)<\|/det\|>", re.DOTALL)
_EOS = "<｜end▁of▁sentence｜>"


def parse_grounding(text: str) -> Parsed:
    """The Markdown without grounding tags; the boxes kept as fields."""
    boxes: list[dict[str, str]] = []
    images = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal images
        boxes.append({"label": match.group(1), "det": match.group(2)})
        if match.group(1) == "image":
            images += 1
            return f"![](images/{images - 1}.jpg)\n"
        return ""

    body = _REF.sub(replace, text.replace(_EOS, ""))
    body = body.replace("\\coloneqq", ":=").replace("\\eqqcolon", "=:")
    body = re.sub(r"\n{3,}", "\n\n", body)
    return Parsed(body.strip(), {"boxes": boxes} if boxes else {})
