"""HTML answers as Markdown: Chandra's layout blocks (`<div data-label=...>`, read as
`chandra/output.py:45-90` parse_html, datalab-to/chandra@a6928a27: Page-Header/Page-Footer
dropped) and QwenVL HTML (elements with data-bbox). Tables stay HTML, as both projects keep
them; math becomes $...$. The outermost elements with a data-bbox become blocks (Chandra's
0-1024 grid, `parse_layout` in chandra/output.py; Qwen's pixels of the image)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from app.profiles.parsers.base import AnswerBox, Parsed, Unparseable, box_of

_FURNITURE = ("Page-Header", "Page-Footer")
_BLOCK = {"p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "pre", "caption", "hr"}
_HEADINGS = {f"h{n}": "#" * n + " " for n in range(1, 7)}
_VOID = {"br", "img", "hr", "input", "meta", "link", "col", "area", "wbr", "source"}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class _ToMarkdown(HTMLParser):
    """A small HTML -> Markdown writer; tables are copied through as HTML."""

    def __init__(self, drop_labels: tuple[str, ...]) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.labels: list[str] = []
        self.drop_labels = drop_labels
        self.skip = 0  # depth inside a dropped block
        self.table = 0
        self.math: list[str] = []  # the delimiters of the open <math> tags

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if self.skip or (tag == "div" and found.get("data-label") in self.drop_labels):
            self.skip += tag == "div"
            return
        if label := found.get("data-label"):
            self.labels.append(label)
        if tag == "table" or self.table:
            self.table += tag == "table"
            self.out.append(self.get_starttag_text() or f"<{tag}>")
        elif tag in _HEADINGS:
            self.out.append("\n\n" + _HEADINGS[tag])
        elif tag == "li":
            self.out.append("\n- ")
        elif tag == "br":
            self.out.append("\n")
        elif tag == "math":
            self.math.append("$$" if "display" in found else "$")
            self.out.append(self.math[-1])
        elif tag == "img":
            self.out.append(f"![{found.get('alt') or ''}]()")
        elif tag in _BLOCK:
            self.out.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            self.skip -= tag == "div"
            return
        if self.table:
            self.out.append(f"</{tag}>")
            self.table -= tag == "table"
        elif tag == "math" and self.math:
            self.out.append(self.math.pop())
        elif tag in _BLOCK:
            self.out.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.out.append(data)


@dataclass
class _OpenBlock:
    depth: int
    start: int  # where its Markdown starts in the writer's output
    category: str
    box: tuple[float, float, float, float]
    raw: list[str] = field(default_factory=list)


class _PlacingMarkdown(_ToMarkdown):
    """The writer, also noting each outermost element with a data-bbox as a block."""

    def __init__(self, drop_labels: tuple[str, ...]) -> None:
        super().__init__(drop_labels)
        self.boxes: list[AnswerBox] = []
        self.depth = 0
        self.block: _OpenBlock | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if self.block is None and tag not in _VOID:
            box = box_of(_NUMBER.findall(found.get("data-bbox") or ""))
            if box is not None:
                label = found.get("data-label") or tag
                self.block = _OpenBlock(self.depth + 1, len(self.out), label, box)
        super().handle_starttag(tag, attrs)
        self.depth += tag not in _VOID

    def handle_endtag(self, tag: str) -> None:
        super().handle_endtag(tag)
        if tag in _VOID:
            return
        if self.block is not None and self.depth == self.block.depth:
            block, self.block = self.block, None
            # a dropped block (page furniture) wrote nothing: its plain text stands in
            text = _tidy("".join(self.out[block.start :])) or " ".join("".join(block.raw).split())
            self.boxes.append(AnswerBox(text, block.category, block.box))
        self.depth = max(0, self.depth - 1)

    def handle_data(self, data: str) -> None:
        super().handle_data(data)
        if self.block is not None:
            self.block.raw.append(data)


def _tidy(markdown: str) -> str:
    return re.sub(r"[ \t]*\n[ \t]*\n\s*", "\n\n", markdown).strip()


def parse_html_blocks(text: str, drop_furniture: bool) -> Parsed:
    """Markdown of an HTML answer; Unparseable when it holds no HTML element at all."""
    if not re.search(r"<[a-zA-Z][^>]*>", text):
        raise Unparseable("no HTML element in the answer")
    body = text.strip().removeprefix("```html").removesuffix("```")
    writer = _PlacingMarkdown(_FURNITURE if drop_furniture else ())
    writer.feed(body)
    writer.close()
    fields = {"labels": writer.labels} if writer.labels else {}
    return Parsed(_tidy("".join(writer.out)), fields, tuple(writer.boxes))
