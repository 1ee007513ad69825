"""dots.ocr's layout JSON (a list of cells with bbox, category, text) as Markdown, the way
`layoutjson2md` writes it (rednote-hilab/dots.ocr@c3084bd4 dots_ocr/utils/format_transformer.py
:145-180); the `_nohf` variant drops page headers and footers. The cells' boxes are kept as
blocks, in pixels of the image as the server resized it (`post_process_cells`,
dots_ocr/utils/layout_utils.py, scales them back from `smart_resize` of the image sent)."""

from __future__ import annotations

import json
import re
from typing import Any

from app.profiles.parsers.base import AnswerBox, Parsed, Unparseable, box_of

_FURNITURE = ("Page-header", "Page-footer")


def parse_dots_layout(text: str, drop_furniture: bool) -> Parsed:
    """Cells in reading order, joined by blank lines. A broken JSON list is Unparseable
    (dots.ocr salvages cells by regex; Folio retries instead)."""
    try:
        cells = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unparseable(f"layout is not JSON: {exc.msg} at {exc.pos}") from exc
    if isinstance(cells, dict):
        cells = [cells]
    if not isinstance(cells, list) or not all(_is_cell(c) for c in cells):
        raise Unparseable("layout is not a list of cells with bbox and category")
    items = []
    for cell in cells:
        category = cell["category"]
        if drop_furniture and category in _FURNITURE:
            continue
        items.append(_cell_markdown(cell))
    return Parsed("\n\n".join(items), {"layout": cells}, tuple(_boxes(cells)))


def _boxes(cells: list[dict[str, Any]]) -> list[AnswerBox]:
    """Every cell's box with its Markdown (a picture's none), page headers and footers too:
    the category says which they are."""
    blocks = []
    for cell in cells:
        box = box_of(cell["bbox"])
        if box is not None:
            text = "" if cell["category"] == "Picture" else _cell_markdown(cell)
            blocks.append(AnswerBox(text, str(cell["category"]), box))
    return blocks


def _is_cell(cell: Any) -> bool:
    return isinstance(cell, dict) and "category" in cell and "bbox" in cell


def _cell_markdown(cell: dict[str, Any]) -> str:
    text = str(cell.get("text") or "")
    if cell["category"] == "Picture":
        x1, y1, x2, y2 = (int(v) for v in cell["bbox"])
        return f"![](picture_{x1}_{y1}_{x2}_{y2}.png)"  # dots.ocr embeds the crop instead
    if cell["category"] == "Formula":
        return formula_markdown(text)
    text = text.strip()
    return text[1:-1] if text[:2] == "`$" and text[-2:] == "$`" else text


def formula_markdown(text: str) -> str:
    """`get_formula_in_markdown`'s main cases: a display formula as a $$ block."""
    text = text.strip()
    if text.startswith("$$") and text.endswith("$$"):
        inner = text[2:-2].strip()
        return text if "$" in inner else f"$$\n{inner}\n$$"
    if text.startswith("\\[") and text.endswith("\\]"):
        return f"$$\n{text[2:-2].strip()}\n$$"
    if re.search(r"\\\[.*\\\]|\$[^$]+\$", text):
        return text
    return f"$$\n{text}\n$$" if text else text
