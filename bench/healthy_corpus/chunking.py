"""Page-sized chunks of a long document, cut on paragraph boundaries.

A document converted whole (a paper, a handbook, a web page) is longer than one page of OCR
output; the detector judges one page's answer. Where the converter marked its pages (a form
feed, as pdftotext and pdfminer write), those are the pages. Otherwise, and for a marked page
longer than `MAX_CHARS`, a document is cut into chunks of about a page: paragraphs
(blank-line separated blocks) are gathered until the next one would pass `MAX_CHARS`, and a
chunk is closed only once it holds `MIN_CHARS` (so a chunk holds at most `MIN_CHARS +
MAX_CHARS`). A single block longer than `MAX_CHARS` (a long table, a one-line HTML export) is
cut at its line breaks, then at row or element ends (`</tr>`, `</p>`, `</li>`, `</div>`), then
at a space. Nothing is rewritten: joining a document's chunks gives the document back (but
for the form feeds and blank pages).
"""

import re

MIN_CHARS = 1_500
MAX_CHARS = 6_000
_BLOCK_END = re.compile(r"\n\s*\n")
_ELEMENT_END = re.compile(r"</(?:tr|p|li|div|table|section|h\d)>")


def page_chunks(text: str, min_chars: int = MIN_CHARS, max_chars: int = MAX_CHARS) -> list[str]:
    """`text` cut into chunks of about `min_chars`..`max_chars` on block boundaries (the last
    chunk may be shorter; a text shorter than `max_chars` is one chunk)."""
    if "\f" in text:
        pages = text.split("\f")
        return [chunk for page in pages for chunk in page_chunks(page, min_chars, max_chars)]
    if len(text) <= max_chars:
        return [text] if text.strip() else []
    chunks: list[str] = []
    current = ""
    for piece in _pieces(text, max_chars):
        if current and len(current) + len(piece) > max_chars and len(current) >= min_chars:
            chunks.append(current)
            current = ""
        current += piece
    if current.strip():
        chunks.append(current)
    return [chunk for chunk in chunks if chunk.strip()]


def _pieces(text: str, max_chars: int) -> list[str]:
    """Blocks with their trailing separator, each at most `max_chars` where a boundary allows."""
    pieces: list[str] = []
    for block in _split_keep(text, _BLOCK_END):
        if len(block) <= max_chars:
            pieces.append(block)
            continue
        for line in block.splitlines(keepends=True):
            pieces.extend(_split_long_line(line, max_chars))
    return pieces


def _split_long_line(line: str, max_chars: int) -> list[str]:
    if len(line) <= max_chars:
        return [line]
    out: list[str] = []
    for part in _split_keep(line, _ELEMENT_END):
        while len(part) > max_chars:
            cut = part.rfind(" ", 0, max_chars)
            cut = cut + 1 if cut > max_chars // 2 else max_chars
            out.append(part[:cut])
            part = part[cut:]
        out.append(part)
    return out


def _split_keep(text: str, boundary: re.Pattern[str]) -> list[str]:
    """`text` split after each match of `boundary`, the match kept with the part before it."""
    parts, start = [], 0
    for match in boundary.finditer(text):
        parts.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        parts.append(text[start:])
    return parts
