"""granite-docling's DocTags as Markdown: Folio's own reading of the tag set shown in docling
(docling-core's `DocTagsDocument` is the official converter; not a dependency here).
Location tokens leave the Markdown (page headers/footers too, OTSL tables become HTML) and
become blocks: an element's four `<loc_N>` are x0, y0, x1, y1 on a 0-500 grid of the page."""

from __future__ import annotations

import re

from app.profiles.parsers.base import AnswerBox, Parsed, Unparseable
from app.profiles.parsers.otsl import otsl_to_html

_LOC = re.compile(r"<loc_\d+>")
_ELEMENT = re.compile(r"<(?P<tag>[a-z_0-9]+)>(?P<body>.*?)</(?P=tag)>", re.DOTALL)
_PLACED = re.compile(
    r"<(?P<tag>[a-z_0-9]+)><loc_(\d+)><loc_(\d+)><loc_(\d+)><loc_(\d+)>(?P<body>.*?)</(?P=tag)>",
    re.DOTALL,
)
_FURNITURE = ("page_header", "page_footer")
_PREFIX = {"title": "# ", "list_item": "- ", "caption": "", "footnote": "", "text": ""}


def parse_doctags(text: str, drop_furniture: bool) -> Parsed:
    """Markdown of a DocTags answer; Unparseable without a <doctag> element."""
    start = text.find("<doctag>")
    if start == -1:
        raise Unparseable("no <doctag> element")
    end = text.find("</doctag>", start)
    inner = text[start + len("<doctag>") : end if end != -1 else None]
    items = []
    for match in _ELEMENT.finditer(_LOC.sub("", inner)):
        tag, body = match.group("tag"), match.group("body")
        if drop_furniture and tag in _FURNITURE:
            continue
        items.append(_element_markdown(tag, body))
    return Parsed("\n\n".join(i for i in items if i), boxes=tuple(_boxes(inner)))


def _boxes(inner: str) -> list[AnswerBox]:
    """The top-level elements that carry a location, with their text as Markdown."""
    blocks = []
    for match in _PLACED.finditer(inner):
        tag, body = match.group("tag"), _LOC.sub("", match.group("body"))
        x0, y0, x1, y1 = (float(match.group(n)) for n in range(2, 6))
        blocks.append(AnswerBox(_element_markdown(tag, body), tag, (x0, y0, x1, y1)))
    return blocks


def _element_markdown(tag: str, body: str) -> str:
    if tag.startswith("section_header_level_"):
        level = int(tag.rsplit("_", 1)[1])
        return "#" * (level + 1) + " " + body.strip()
    if tag == "otsl":
        return otsl_to_html(body)
    if tag == "formula":
        return f"$$\n{body.strip()}\n$$"
    if tag == "code":
        return f"```\n{re.sub(r'^<_[^>]*_>', '', body).strip()}\n```"
    if tag in ("picture", "chart"):
        return "![]()"
    if tag in ("unordered_list", "ordered_list"):
        return "\n".join(f"- {m.group('body').strip()}" for m in _ELEMENT.finditer(body))
    return _PREFIX.get(tag, "") + body.strip()
