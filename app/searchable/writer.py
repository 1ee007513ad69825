"""A document's searchable PDF: the original, each page given the kept text as an invisible
layer where it has none of its own.

Per page, by where its kept text came from:
- its own text layer, or a page whose own layer reads as text though another reader's text
  was kept: nothing is added (the PDF holds that text already; a second copy would double
  every search hit and every copy); a layer that is mojibake gets the kept text beside it;
- Tesseract, with word boxes: its words at their boxes;
- a model or RapidOCR (no word boxes): the words Tesseract finds on the page, aligned with the
  kept words (`align`); where Tesseract finds none, the model's own blocks, where it gave any;
- no text, or no box at all: nothing.
The words go in the kept text's order, so a copy pastes as the Markdown reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from app.errors import FolioError
from app.pdf.textlayer import text_layer_is_usable
from app.searchable.align import FoundWord, line_boxes, on_page, place, split_found
from app.searchable.document import LayeredPdf, PdfNotWritten
from app.searchable.layer import content_stream
from app.searchable.words import layer_text, tokens

OWN_LAYER_ENGINES = frozenset({"textlayer"})
BOXED_SOURCES = frozenset({"tesseract", "textlayer"})  # positions whose words are a reader's


@dataclass(frozen=True)
class PageText:
    """What the writer needs of a page: its kept text, who read it, and its word boxes (the
    page JSON's `positions`)."""

    number: int
    engine: str | None
    text: str | None
    positions: dict[str, Any] | None = None


class PageWords(Protocol):
    def read(self, path: Path, number: int, size_pt: tuple[float, float]) -> list[FoundWord]:
        """The words found on page `number`, boxes in points of the page as shown."""
        ...


def boxed_words(positions: dict[str, Any] | None) -> list[FoundWord]:
    """The words a reader placed (Tesseract's, the text layer's), in points."""
    if not positions or positions.get("source") not in BOXED_SOURCES:
        return []
    return [
        FoundWord(w["text"], tuple(w["box_pt"]), int(w.get("line") or 0))
        for w in positions.get("words") or ()
        if w.get("text")
    ]


def model_blocks(positions: dict[str, Any] | None) -> list[FoundWord]:
    """A model's own blocks, each as one line of words."""
    blocks = (positions or {}).get("blocks") or ()
    return [
        FoundWord(b["text"], tuple(b["box_pt"]), index)
        for index, b in enumerate(blocks)
        if b.get("text")
    ]


class SearchablePdfWriter:
    """Writes searchable PDFs; `original` gives a document's local file, `words` reads the
    words on a page whose kept text has no boxes (None: such pages get none)."""

    def __init__(
        self,
        original: Callable[[str, str | None, str | None], Path],
        words: PageWords | None,
        min_layer_chars: int = 25,
    ) -> None:
        """`min_layer_chars`: the text a page's own layer must hold to count as one (the
        pipeline's `textlayer_min_chars`)."""
        self.original = original
        self.words = words
        self.min_layer_chars = min_layer_chars

    def write(
        self, path: str, sha256: str | None, etag: str | None, pages: Sequence[PageText]
    ) -> bytes:
        """The document's searchable PDF; PdfNotWritten with the reason where it cannot be."""
        try:
            local = self.original(path, sha256, etag)
        except FolioError as exc:
            raise PdfNotWritten(f"the original could not be read: {exc}") from exc
        layered = LayeredPdf(local)
        try:
            for page in pages:
                if 1 <= page.number <= layered.page_count:
                    self._add_page(layered, page)
            return layered.finish()
        except PdfNotWritten:
            raise
        except Exception as exc:  # MuPDF raises bare Exceptions; a page that failed to render
            raise PdfNotWritten(f"the text layer could not be added: {exc}") from exc
        finally:
            layered.close()

    def _add_page(self, layered: LayeredPdf, page: PageText) -> None:
        if not page.text or page.engine in OWN_LAYER_ENGINES:
            return
        if text_layer_is_usable(layered.own_text(page.number), self.min_layer_chars):
            return
        kept = tokens(layer_text(page.text))
        if not kept:
            return
        size, to_user = layered.page_frame(page.number)
        found = boxed_words(page.positions)
        if not found and self.words is not None:
            # read from this write's own copy: a path no earlier read has cached
            found = self.words.read(layered.path, page.number, size)
        if not found:
            found = model_blocks(page.positions)
        placed = on_page(place(kept, found, size[0]), size)
        if placed:
            lines = line_boxes(split_found(found))
            layered.add_layer(page.number, content_stream(placed, lines, to_user, layered.codes))
