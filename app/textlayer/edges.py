"""Running headers, footers, page numbers and margin stamps: lines to leave out of the Markdown.

Pages are processed one by one, possibly on different workers, so the document-level evidence
travels with the page: the PDF seam reads the edge lines of the two pages before and after it
(`PageLayout.neighbour_edges`), and a line at this page's edge that repeats at a neighbour's edge
(as it is, or with its numbers ignored when it has three words or more, so that
"Annals of X, vol. 3 | 17" matches "Annals of X, vol. 3 | 18" while "Section 1" and
"Section 2" stay headings) is a running line. Single pages get the
page-level signs: a page number alone, a small line set apart from the body by a gap, a row of
short pieces spread across the page edge, text turned sideways in the margin.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence

from app.textlayer.model import PageLayout, TextLine

EDGE_BAND = 0.12  # share of the page height, top and bottom, where running lines sit
MAX_ROWS = 3  # running rows looked for at each edge
_PAGE_NUMBER = re.compile(
    r"^[-–—(\[]?\s*(page|p\.|seite|pag\.?|pág\.?)?\s*([0-9]{1,4}|[ivxlc]{1,7})"
    r"(\s*(of|/|von|de|sur)\s*[0-9]{1,4})?\s*[-–—)\]]?$",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")


def mask(text: str) -> str:
    """A running line's identity: case, spacing and numbers (page numbers, dates) ignored."""
    return " ".join(_DIGITS.sub("#", text.lower()).split())


def body_size(lines: Sequence[TextLine]) -> float:
    """The font size most characters are set in."""
    sizes = Counter[float]()
    for line in lines:
        sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def running_lines(
    layout: PageLayout, protected: set[int] | None = None, sizes_known: bool = True
) -> set[int]:
    """Indexes into `layout.lines` of the lines that are not the page's content.

    `protected` lines (a table's header row) end the search at their edge. Without
    `sizes_known` (OCR lines, whose box heights vary with ascenders and descenders) the rules
    that compare a line's size with the body's stay out.
    """
    lines, protected = layout.lines, protected or set()
    body = body_size(lines) if sizes_known else 0.0
    repeated = {mask(text) for edges in layout.neighbour_edges for text in edges}
    repeated |= {text for edges in layout.neighbour_edges for text in edges}
    dropped = {i for i, line in enumerate(lines) if _in_margin_sideways(line, layout.width)}
    for at_bottom, rows in ((False, _rows_from_top(layout)), (True, _rows_from_bottom(layout))):
        for depth, (row, gap) in enumerate(rows):
            outer = depth == 0
            if (
                depth == MAX_ROWS
                or protected.intersection(row)
                or not (
                    _is_running(row, gap, lines, body, repeated, layout.width, outer, at_bottom)
                    or (depth <= 1 and _numbered_at_an_end(row, lines))
                )
            ):
                break
            dropped.update(row)
    return dropped | _page_number_at_content_edge(layout, dropped | protected)


def _page_number_at_content_edge(layout: PageLayout, settled: set[int]) -> set[int]:
    """A page number alone as the last (or first) row of text, though the page's margin below it
    is deep (a cropped or short page): the edge bands count from the page, this from the text."""
    lines = [i for i in range(len(layout.lines)) if i not in settled]
    rows = _rows([layout.lines[i] for i in lines], reverse=False)
    found: set[int] = set()
    for row in (rows[0], rows[-1]) if rows else ():
        if all(_PAGE_NUMBER.match(layout.lines[lines[i]].text) for i in row):
            found.update(lines[i] for i in row)
    return found


def _in_margin_sideways(line: TextLine, width: float) -> bool:
    return line.vertical and (line.box.x1 < width * EDGE_BAND or line.box.x0 > width * 0.88)


def _is_running(
    row: list[int],
    gap: float,
    lines: Sequence[TextLine],
    body: float,
    repeated: set[str],
    width: float,
    outermost: bool,
    at_bottom: bool,
) -> bool:
    texts = [lines[i].text for i in row]
    if all(_repeats(t, repeated) for t in texts) or all(_PAGE_NUMBER.match(t) for t in texts):
        return True
    height = max(lines[i].box.height for i in row)
    size = max(lines[i].size for i in row)
    # Set apart by a gap: smaller than the body, or (at the bottom only, where no title sits) a
    # short line of body size, as "Download date: 28 Dec 2018" under a cover page.
    narrow = max(lines[i].box.x1 for i in row) - min(lines[i].box.x0 for i in row) < width / 2
    smaller = size < 0.95 * body or (at_bottom and size <= body and narrow)
    set_apart = gap >= 1.5 * height and smaller
    small = not body or size <= 1.3 * body  # sizes unknown: shape and place decide
    spread = len(row) >= 2 and small and all(len(t) <= 60 for t in texts)
    spread = spread and (outermost or gap >= 0.3 * height) and _spans_page(row, lines, width)
    return set_apart or (spread and _mostly_empty(row, lines, width))


def _mostly_empty(row: list[int], lines: Sequence[TextLine], width: float) -> bool:
    """A running row's pieces leave most of the page's width empty ("7-33 ... AMT Handbook");
    the first lines of two columns of body text fill it."""
    return sum(lines[i].box.width for i in row) <= width / 2


def _numbered_at_an_end(row: list[int], lines: Sequence[TextLine]) -> bool:
    """A book's running head: "400 BRITISH HUSBANDRY. [Ch. XIX." (page number first or last)."""
    pieces = sorted(row, key=lambda i: lines[i].box.x0)
    ends = {lines[pieces[0]].text, lines[pieces[-1]].text}
    short = sum(len(lines[i].text) for i in row) <= 80
    return len(pieces) >= 2 and short and any(_PAGE_NUMBER.match(t) for t in ends)


def _repeats(text: str, repeated: set[str]) -> bool:
    return text in repeated or (len(text.split()) >= 3 and mask(text) in repeated)


def _spans_page(row: list[int], lines: Sequence[TextLine], width: float) -> bool:
    """Pieces set at both sides of the page, as footers are (left, centre, right)."""
    return min(lines[i].box.x0 for i in row) < width * 0.4 < max(lines[i].box.x0 for i in row)


def _rows_from_top(layout: PageLayout) -> Iterator[tuple[list[int], float]]:
    """Rows of lines in the top band, outermost first, each with the gap to the next row in."""
    band = layout.height * EDGE_BAND
    rows = _rows(layout.lines, reverse=False)
    for row, following in zip(rows, [*rows[1:], None], strict=False):
        bottom = max(layout.lines[i].box.y1 for i in row)
        if bottom > band:
            return
        nxt = min(layout.lines[i].box.y0 for i in following) if following else layout.height
        yield row, nxt - bottom


def _rows_from_bottom(layout: PageLayout) -> Iterator[tuple[list[int], float]]:
    band = layout.height * (1 - EDGE_BAND)
    rows = _rows(layout.lines, reverse=True)
    for row, following in zip(rows, [*rows[1:], None], strict=False):
        top = min(layout.lines[i].box.y0 for i in row)
        if top < band:
            return
        prev = max(layout.lines[i].box.y1 for i in following) if following else 0.0
        yield row, top - prev


def _rows(lines: Sequence[TextLine], reverse: bool) -> list[list[int]]:
    """Horizontal lines grouped into rows that share a baseline band, top to bottom.

    One sort and one pass: the open row's lowest bottom is kept as lines join it, so a page
    of many lines on one band (106,000 overlapping ones, issue 62) costs n log n, not n^2."""
    order = sorted(
        (i for i, line in enumerate(lines) if not line.vertical), key=lambda i: lines[i].box.y0
    )
    rows: list[list[int]] = []
    bottom = 0.0  # the open row's lowest bottom
    for i in order:
        box = lines[i].box
        if rows and box.y0 < bottom - box.height / 2:
            rows[-1].append(i)
            bottom = max(bottom, box.y1)
        else:
            rows.append([i])
            bottom = box.y1
    return rows[::-1] if reverse else rows
