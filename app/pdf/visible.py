"""Which of a page's text a reader sees: what grounding and the text-layer fallback may trust.

A text layer can hold text no reader sees, and a page's result or a loop stop's count must
not come from it (issue 62, defect 8: a page whose invisible layer repeated its one visible
line 5,000 times let every looping attempt run to max_tokens, and then became the result).
A span is unseen when it is

- drawn invisibly: render mode 3 (MuPDF reads it with alpha 0), as OCR layers are written;
- drawn before an opaque image that covers it (text under a scan);
- outside the page box (its centre off the crop box);
- far smaller than the page's body, or smaller than any print is read at;

and a line that repeats, word for word, a line already kept at the same place is seen once.
A page whose layer is mostly unseen is a scan: OCRmyPDF's searchable PDFs (render mode 3
over a full-page image) and older tools' text under the scan read as what they are.

The rules work on PyMuPDF's "dict" blocks and the page's draw log (`Page.get_bboxlog`), as
plain values; this module never opens a document.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# Thresholds, from the shared corpus (58 PDFs, 225 pages: docling, pypdf and olmOCR-bench
# samples; measured with PyMuPDF 1.28 on 2026-11-29):
# - the smallest span that holds a letter or digit is 0.27 of its page's body size (3 pt
#   small print on a newspaper page set in 11 pt); the only spans below 0.2 are zero-width
#   spaces (0.75 pt on a 10.8 pt page). 0.2 leaves a quarter below the smallest real print.
TINY_SHARE = 0.2
# - no content span is under 3 pt; half of that is where no reader reads print at 100 %.
MIN_READABLE_PT = 1.5
# - every page is seen whole (1.0) or not at all (0.0: OCR layers in render mode 3, and
#   text drawn under a full-page scan); half is the middle of that gap.
MIN_SEEN_SHARE = 0.5
# An image smaller than this share of the page hides no text worth a rule (a logo's
# background): only large images are asked whether they cover text.
_MIN_COVER_SHARE = 0.01
_MAX_COVERS = 32  # the largest images asked; a page of hundreds of tiles is asked of these
_GRID = 32  # cells a side of the grid that says where text was painted after an image
_CELLS = (_GRID + 1) ** 2  # the page's edge is a cell of its own
_TEXT_DRAWS = ("fill-text", "stroke-text", "clip-text", "clip-stroke-text", "ignore-text")

Rect = tuple[float, float, float, float]


@dataclass(frozen=True)
class Seen:
    """A page's text as a reader sees it: the dict blocks with unseen spans taken out, and
    how many characters the layer held and how many of them were seen."""

    blocks: list[dict[str, Any]]
    chars: int
    seen_chars: int

    @property
    def is_scan(self) -> bool:
        """Mostly unseen: the page is a scan, whatever text lies in or under it."""
        return self.chars > 0 and self.seen_chars < MIN_SEEN_SHARE * self.chars

    @property
    def text(self) -> str:
        """The seen lines, one a line, blocks apart by a blank line (as MuPDF's plain text)."""
        if self.is_scan:
            return ""
        return "\n\n".join(
            "\n".join(_line_text(line) for line in block["lines"])
            for block in self.blocks
            if block.get("lines")
        )


def seen_text(blocks: list[dict[str, Any]], draws: Sequence[tuple[str, Rect]], page: Rect) -> Seen:
    """`blocks` (PyMuPDF "dict" blocks, text only) with the spans a reader cannot see taken
    out; `draws` is the page's draw log in painting order, `page` its crop box."""
    spans = [s for b in blocks for line in b.get("lines", ()) for s in line["spans"]]
    chars = sum(_content(s) for s in spans)
    drawn = [s for s in spans if s.get("alpha", 255) and _centre_in(s["bbox"], page)]
    covers = _Covers(draws, page)
    drawn = [s for s in drawn if not covers.hide(s["bbox"])]
    body = _body_size(drawn)
    floor = max(MIN_READABLE_PT, TINY_SHARE * body)
    kept_ids = {id(s) for s in drawn if s["size"] >= floor}
    seen_chars = sum(_content(s) for s in spans if id(s) in kept_ids)
    out = []
    places: dict[tuple[str, int, int], list[Rect]] = {}
    for block in blocks:
        lines = []
        for line in block.get("lines", ()):
            kept = [s for s in line["spans"] if id(s) in kept_ids]
            if kept and _new_place({**line, "spans": kept}, places):
                lines.append({**line, "spans": kept})
        if lines:
            out.append({**block, "lines": lines})
    return Seen(out, chars, seen_chars)


def _content(span: dict[str, Any]) -> int:
    return len(span["text"].strip())


def _line_text(line: dict[str, Any]) -> str:
    return "".join(s["text"] for s in line["spans"]).strip()


def _body_size(spans: Iterable[dict[str, Any]]) -> float:
    """The size most characters are set in, among the spans drawn on the page."""
    sizes = Counter[float]()
    for span in spans:
        if span["size"] >= MIN_READABLE_PT:
            sizes[round(span["size"], 1)] += _content(span)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _new_place(line: dict[str, Any], places: dict[tuple[str, int, int], list[Rect]]) -> bool:
    """Whether no line of the same text was kept over most of this one (centres apart by
    less than half its width and height): the same words printed over themselves (fake bold,
    or a layer repeated in place) read once. `places` holds the kept lines by text and cell."""
    box = line["bbox"]
    width, height = max(1.0, box[2] - box[0]), max(1.0, box[3] - box[1])
    text, (cx, cy) = _line_text(line), _centre(box)
    column, row = round(cx / width), round(cy / height)
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            for kept in places.get((text, column + dx, row + dy), ()):
                kx, ky = _centre(kept)
                if abs(kx - cx) < width / 2 and abs(ky - cy) < height / 2:
                    return False
    places.setdefault((text, column, row), []).append(box)
    return True


def _centre(box: Rect) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def _centre_in(box: Rect, page: Rect) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return page[0] <= cx <= page[2] and page[1] <= cy <= page[3]


class _Covers:
    """The images large enough to hide text, each with where text was painted after it.

    The draw log gives painting order; a span is hidden when it lies wholly in an image and
    no text was painted at its centre after that image. "There" is a cell of a coarse grid
    over the page: a cell any later text touches counts as painted over (text is kept, never
    lost, on the grid's account). The log is walked once, from its end, marking the cells
    text was painted in so far (until every cell is marked): a long log costs one pass."""

    def __init__(self, draws: Sequence[tuple[str, Rect]], page: Rect) -> None:
        self.page = page
        area = max(1.0, _area(page))
        images = [
            (index, rect)
            for index, (kind, rect) in enumerate(draws)
            if kind == "fill-image" and _area(rect) >= _MIN_COVER_SHARE * area
        ]
        chosen = dict(sorted(images, key=lambda item: -_area(item[1]))[:_MAX_COVERS])
        painted: set[tuple[int, int]] = set()
        after: dict[int, frozenset[tuple[int, int]]] = {}
        for index in range(len(draws) - 1, -1, -1):
            kind, rect = draws[index]
            if index in chosen:
                after[index] = frozenset(painted)
            elif kind in _TEXT_DRAWS and kind != "ignore-text" and len(painted) < _CELLS:
                (c0, r0), (c1, r1) = self._cell(rect[0], rect[1]), self._cell(rect[2], rect[3])
                painted.update((c, r) for c in range(c0, c1 + 1) for r in range(r0, r1 + 1))
        self.images = [(rect, after[index]) for index, rect in chosen.items()]

    def hide(self, box: Rect) -> bool:
        centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        cell = self._cell(*centre)
        return any(_contains(rect, box) and cell not in later for rect, later in self.images)

    def _cell(self, x: float, y: float) -> tuple[int, int]:
        x0, y0, x1, y1 = self.page
        column = int((x - x0) / max(1e-6, x1 - x0) * _GRID)
        row = int((y - y0) / max(1e-6, y1 - y0) * _GRID)
        return min(_GRID, max(0, column)), min(_GRID, max(0, row))


def _area(rect: Rect) -> float:
    return max(0.0, rect[2] - rect[0]) * max(0.0, rect[3] - rect[1])


def _contains(rect: Rect, box: Rect) -> bool:
    """The whole of `box` inside `rect`. An image's box in the draw log is not clipped: a
    figure's caption set just below a screenshot whose box reaches 1 pt past the caption's
    top (IBM's redp5110 sample, page 14) is still read, and text a scan hides lies inside it."""
    return rect[0] <= box[0] and rect[1] <= box[1] and box[2] <= rect[2] and box[3] <= rect[3]
