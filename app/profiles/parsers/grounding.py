"""DeepSeek-OCR's grounding answer: Markdown with `<|ref|>label<|/ref|><|det|>[[...]]<|/det|>`
pairs, post-processed as `run_dpsk_ocr_pdf.py:123-135, 286-320` does
(deepseek-ai/DeepSeek-OCR@e4ac34e1): image refs become links, other pairs are deleted.
Each pair's boxes (0-999 of the image, `/ 999 * image_width` there) are kept with the text
that follows the pair up to the next one."""

from __future__ import annotations

import ast
import re

from app.profiles.parsers.base import AnswerBox, Parsed, box_of

_REF = re.compile(r"<\|ref\|>(.*?)<\|/ref\|><\|det\|>(.*?)<\|/det\|>", re.DOTALL)
_EOS = "<｜end▁of▁sentence｜>"


def parse_grounding(text: str) -> Parsed:
    """The Markdown without grounding tags; the boxes kept as fields and as blocks."""
    text = text.replace(_EOS, "")
    boxes: list[dict[str, str]] = []
    images = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal images
        boxes.append({"label": match.group(1), "det": match.group(2)})
        if match.group(1) == "image":
            images += 1
            return f"![](images/{images - 1}.jpg)\n"
        return ""

    body = _colons(_REF.sub(replace, text))
    body = re.sub(r"\n{3,}", "\n\n", body)
    fields = {"boxes": boxes} if boxes else {}
    return Parsed(body.strip(), fields, tuple(grounding_boxes(text)))


def grounding_boxes(text: str) -> list[AnswerBox]:
    """One block per box of each ref/det pair, with the text after the pair."""
    matches = list(_REF.finditer(text))
    blocks = []
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        following = _colons(text[match.end() : end]).strip()
        for box in _det_boxes(match.group(2)):
            blocks.append(AnswerBox(following, match.group(1), box))
    return blocks


def _colons(text: str) -> str:
    return text.replace("\\coloneqq", ":=").replace("\\eqqcolon", "=:")


def _det_boxes(det: str) -> list[tuple[float, float, float, float]]:
    """The boxes of a det payload, `[[x0, y0, x1, y1], ...]` (the official script evals it)."""
    try:
        values = ast.literal_eval(det.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    if isinstance(values, list | tuple) and values and not isinstance(values[0], list | tuple):
        values = [values]  # a single box written without the outer brackets
    found = [box_of(v) for v in values] if isinstance(values, list | tuple) else []
    return [box for box in found if box is not None]
