"""How much text one page may make Folio read: caps on its text layer's pieces, lines and
characters, checked before MuPDF builds the layer and again on what it built.

A 22 KB one-page PDF held ~106,000 invisible overlapping lines (issue 62, defect 4): its
text read with no bound took minutes of a core and gigabytes. The cost of reading a page's
text grows with what its content streams draw, not with the file's size, so the caps are on
that: before any extraction the page's content (its streams and the forms they draw, each
counted as often as it is drawn) is scanned for text-showing operators and the bytes of its
text objects; after it, the lines, pieces and characters MuPDF read are counted. A page over
a cap fails alone, with the cap it broke named.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from app.errors import RenderError

# Text-showing operators: Tj, TJ, ' and ". Counted as bytes (8x faster than a tokenising
# pattern on a 22 MB stream), so a string holding "Tj" or an apostrophe counts too: an upper
# bound, which is what a cap needs.
_SHOWS = (b"Tj", b"TJ", b"'", b'"')
_TEXT_OBJECT_ENDS = re.compile(rb"\b[BE]T\b")
# Bytes a character takes in a text object, at most (kerning arrays, positioning and hex
# strings around the glyphs): a page whose text objects hold more than this many times the
# character cap cannot be under it. On the shared corpus (225 pages) the most text-object
# bytes on a page is 50,769 and the most text-showing operators 4,000 (the newspaper page):
# the default caps (2,000,000 bytes, 40,000 operators) stand 39x and 10x above them.
_BYTES_PER_CHAR = 10


@dataclass(frozen=True)
class TextCaps:
    """What one page's text layer may hold (the settings' `textlayer_max_*`)."""

    chars: int = 200_000
    lines: int = 20_000
    spans: int = 40_000


class TextLayerTooLarge(RenderError):
    """A page whose text layer is over a cap: it fails alone, with the cap in its reason."""

    category = "text_layer_too_large"


@dataclass(frozen=True)
class ContentCount:
    """What a page's content streams draw: text-showing operators and text-object bytes."""

    shows: int
    text_bytes: int


def count_content(doc: Any, page: Any) -> ContentCount:
    """Scan page `page` of `doc` (PyMuPDF) without running it: its content streams and every
    form it draws, each counted as often as its drawer draws it (a form drawn 1,000 times by
    a form drawn 1,000 times counts a million times)."""
    streams = {0: b"".join(doc.xref_stream(xref) or b"" for xref in page.get_contents())}
    drawn_by: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for xref, name, invoker, _ in page.get_xobjects():
        if doc.xref_get_key(xref, "Subtype")[1] == "/Form":
            streams[xref] = doc.xref_stream(xref) or b""
            drawn_by[xref].append((name, invoker))
    times = _times_drawn(streams, drawn_by)
    shows = text_bytes = 0
    for xref, body in streams.items():
        shows += times.get(xref, 0) * sum(body.count(operator) for operator in _SHOWS)
        text_bytes += times.get(xref, 0) * _text_object_bytes(body)
    return ContentCount(shows, text_bytes)


def _text_object_bytes(body: bytes) -> int:
    """Bytes between BT and ET, in one pass (a BT left open runs to the stream's end)."""
    total, opened = 0, None
    for match in _TEXT_OBJECT_ENDS.finditer(body):
        if match.group() == b"BT":
            opened = match.end() if opened is None else opened
        elif opened is not None:
            total, opened = total + match.start() - opened, None
    return total + (len(body) - opened if opened is not None else 0)


def _times_drawn(
    streams: dict[int, bytes], drawn_by: dict[int, list[tuple[str, int]]]
) -> dict[int, int]:
    """How often each stream is drawn on the page (the page's own: once). A form that draws
    itself, at any depth, is drawn as often as its chain allows before the cycle: MuPDF stops
    such a cycle, and it counts once per pass here."""
    times = {0: 1}
    for _ in range(len(streams)):  # forms nest at most as deep as there are forms
        changed = False
        for xref, drawers in drawn_by.items():
            total = sum(
                times.get(invoker, 0) * _uses(streams.get(invoker, b""), name)
                for name, invoker in drawers
                if invoker != xref
            )
            if times.get(xref) != total:
                times[xref], changed = total, True
        if not changed:
            break
    return times


def _uses(body: bytes, name: str) -> int:
    return len(re.findall(rb"/" + re.escape(name.encode()) + rb"\s+Do\b", body))


def check_content(count: ContentCount, caps: TextCaps, number: int) -> None:
    """Refuse a page whose content draws more text than the caps let Folio read."""
    if count.shows > caps.spans:
        raise TextLayerTooLarge(
            f"page {number} draws {count.shows:,} pieces of text, over the {caps.spans:,} cap "
            "(textlayer_max_spans)"
        )
    if count.text_bytes > _BYTES_PER_CHAR * caps.chars:
        raise TextLayerTooLarge(
            f"page {number} holds {count.text_bytes:,} bytes of text objects, over what "
            f"{caps.chars:,} characters take (textlayer_max_chars)"
        )


def check_read(blocks: list[dict[str, Any]], caps: TextCaps, number: int) -> None:
    """Refuse a page whose read text layer (PyMuPDF "dict" blocks) is over a cap."""
    lines = [line for block in blocks for line in block.get("lines", ())]
    spans = sum(len(line["spans"]) for line in lines)
    chars = sum(len(span["text"]) for line in lines for span in line["spans"])
    for what, found, cap, setting in (
        ("lines", len(lines), caps.lines, "textlayer_max_lines"),
        ("pieces of text", spans, caps.spans, "textlayer_max_spans"),
        ("characters", chars, caps.chars, "textlayer_max_chars"),
    ):
        if found > cap:
            raise TextLayerTooLarge(
                f"page {number}'s text layer holds {found:,} {what}, over the {cap:,} cap "
                f"({setting})"
            )
