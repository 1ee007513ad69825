"""The PDF seam (PyMuPDF): validate a document, rasterise a page, read its text layer."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf
from PIL import Image

from app.errors import DocumentError, RenderError
from app.pdf.layout import read_layout, read_tables
from app.pdf.page_text import read_seen, seen_places
from app.pdf.text_bounds import TextCaps, TextLayerTooLarge
from app.textlayer.model import PageLayout, TableGrid

# MuPDF keeps global state and PyMuPDF is not thread-safe, even across documents: every call into
# it goes through this lock. Rendering is fast next to OCR, which runs outside it.
log = logging.getLogger(__name__)
_MUPDF_LOCK = threading.Lock()
_MAX_OPEN_DOCS = 8
_SNIFF_BYTES = 1024
# A text layer's words: (x0, y0, x1, y1) in points, the word, its line's number on the page.
PageWords = tuple[tuple[float, float, float, float, str, int], ...]


@dataclass(frozen=True)
class DocumentLimits:
    max_bytes: int
    max_pages: int
    max_page_pixels: int | None = None


@dataclass(frozen=True)
class RenderedPage:
    image: Image.Image
    text_layer: str
    layout: PageLayout | None = None  # read when the page has a text layer
    size_pt: tuple[float, float] = (0.0, 0.0)  # the page's size in PDF points
    words: PageWords = ()
    points: tuple[float, float] | None = None  # the page's size in PDF points


def inspect_document(path: Path, limits: DocumentLimits) -> int:
    """Page count of a PDF that Folio can process; DocumentError (with a category) otherwise."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError as exc:
        raise DocumentError("unreadable", f"cannot read file: {exc.strerror or exc}") from exc
    if size == 0:
        raise DocumentError("empty_file", "file is empty (0 bytes)")
    if size > limits.max_bytes:
        mb = size / 2**20
        raise DocumentError(
            "too_large", f"file is {mb:.0f} MiB, over the {limits.max_bytes / 2**20:.0f} MiB limit"
        )
    if b"%PDF-" not in head:
        raise DocumentError("not_pdf", "not a PDF (no %PDF- header)")
    with _MUPDF_LOCK:
        try:
            doc = pymupdf.open(path, filetype="pdf")
        except Exception as exc:  # MuPDF raises several types for broken files
            raise DocumentError("corrupt", f"cannot open PDF: {_unplaced(exc, path)}") from exc
        try:
            if doc.needs_pass:
                raise DocumentError("encrypted", "PDF is encrypted and needs a password")
            count = doc.page_count
            if limits.max_page_pixels and count <= limits.max_pages:
                _refuse_image_bombs(doc, limits.max_page_pixels)
        except DocumentError:
            raise
        except Exception as exc:  # a broken page tree (a cycle, a bad /Count) fails this file
            raise DocumentError("corrupt", f"cannot read the PDF's pages: {exc}") from exc
        finally:
            doc.close()
    if count == 0:
        raise DocumentError("no_pages", "PDF has no pages")
    if count > limits.max_pages:
        raise DocumentError(
            "too_many_pages", f"PDF has {count} pages, over the {limits.max_pages} limit"
        )
    return count


def _refuse_image_bombs(doc: pymupdf.Document, max_pixels: int) -> None:
    # Image sizes come from the PDF's dictionaries, so this decodes nothing: a tiny file can
    # declare a gigapixel image that MuPDF would otherwise inflate into memory when rendering.
    for page in doc.pages():
        pixels = sum(int(image[2]) * int(image[3]) for image in page.get_images(full=True))
        if pixels > max_pixels:
            raise DocumentError(
                "decompression_bomb",
                f"page {page.number + 1} holds {pixels / 1e6:.0f} megapixels of images, "
                f"over the {max_pixels / 1e6:.0f} megapixel limit",
            )


@dataclass
class _OpenDocument:
    """A document kept open, with the edge lines read from its pages so far (running headers
    are looked for on the neighbours): a page's edges are read once per process, not once per
    neighbouring page. Each page still reads whatever it lacks, so a page runs alone on any
    worker; the edges go with the document."""

    doc: pymupdf.Document
    edges_read: dict[int, list[str]] = field(default_factory=dict)


_OPEN_DOCS: OrderedDict[str, _OpenDocument] = OrderedDict()


@dataclass(frozen=True)
class PageOutline:
    """A page read without rasterising it: its text layer, its size in PDF points, and the
    pixels a render at Folio's DPI will have (MuPDF's own rounding, so they match)."""

    text_layer: str
    size_pt: tuple[float, float]
    pixels: tuple[int, int]


def read_page(
    path: Path, number: int, dpi: int, max_side: int, caps: TextCaps | None = None
) -> PageOutline:
    """Page `number` (1-based): the text of its layer a reader sees (none for a page that is
    mostly unseen text, a scan), and its sizes; `TextLayerTooLarge` past `caps`. Rasterising
    costs more than the rest of a page's CPU in Folio; a page a model reads is rasterised at
    the model's own size, so the render at `dpi` waits for an engine that asks for it
    (`rasterize_fitted`)."""
    with _MUPDF_LOCK:
        try:
            page = _open(path).doc[number - 1]
            box = page.rect * _fitted_matrix(page, dpi, max_side)
            pixels = (box.irect.width, box.irect.height)
            size = (float(page.rect.width), float(page.rect.height))
            return PageOutline(read_seen(page, caps or TextCaps()).text, size, pixels)
        except TextLayerTooLarge:
            raise
        except Exception as exc:  # a damaged page must fail alone, whatever MuPDF raised
            raise RenderError(f"page {number} failed to render: {exc}") from exc


def render_page(path: Path, number: int, dpi: int, max_side: int) -> RenderedPage:
    """Rasterise page `number` (1-based) at `dpi`, shrunk so its longest side fits `max_side`."""
    with _MUPDF_LOCK:
        try:
            opened = _open(path)
            page = opened.doc[number - 1]
            image = _pixels(page, _fitted_matrix(page, dpi, max_side))
            text = read_seen(page, TextCaps()).text
            layout = _layout_or_none(opened, number) if text.strip() else None
            words = _words(page) if text.strip() else ()
            size = (float(page.rect.width), float(page.rect.height))
        except Exception as exc:  # a damaged page must fail alone, whatever MuPDF raised
            raise RenderError(f"page {number} failed to render: {exc}") from exc
    return RenderedPage(
        image=image, text_layer=text, layout=layout, size_pt=size, words=words, points=size
    )


def rasterize_fitted(path: Path, number: int, dpi: int, max_side: int) -> Image.Image:
    """Page `number` (1-based) as `render_page` rasterises it, without its text."""
    with _MUPDF_LOCK:
        try:
            page = _open(path).doc[number - 1]
            return _pixels(page, _fitted_matrix(page, dpi, max_side))
        except Exception as exc:  # a damaged page must fail alone, whatever MuPDF raised
            raise RenderError(f"page {number} failed to render: {exc}") from exc


def rasterize_preview(path: Path, number: int, dpi: int, max_side: int, width: int) -> Image.Image:
    """Page `number` as `rasterize_fitted` renders it, but at most `width` pixels wide: a
    preview rendered at the size it is shown, never the full render scaled down."""
    with _MUPDF_LOCK:
        try:
            page = _open(path).doc[number - 1]
            matrix = _fitted_matrix(page, dpi, max_side)
            if page.rect.width * matrix.a > width:
                zoom = width / page.rect.width
                matrix = pymupdf.Matrix(zoom, zoom)
            return _pixels(page, matrix)
        except Exception as exc:  # a damaged page must fail alone, whatever MuPDF raised
            raise RenderError(f"page {number} failed to render: {exc}") from exc


def _fitted_matrix(page: pymupdf.Page, dpi: float, max_side: int) -> pymupdf.Matrix:
    zoom = dpi / 72
    longest = max(page.rect.width, page.rect.height) * zoom
    if longest > max_side:
        zoom *= max_side / longest
    return pymupdf.Matrix(zoom, zoom)


# What runs every rasterising: given the render, returns its image. A benchmark that keeps
# CPU time by stage sets one at its process's start (`time_rasters`); none, the render itself.
RasterTimer = Callable[[Callable[[], Image.Image]], Image.Image]
_raster_timer: RasterTimer | None = None


def time_rasters(timer: RasterTimer | None) -> None:
    """Run every later rasterising of this process through `timer` (None: directly)."""
    global _raster_timer
    _raster_timer = timer


def _pixels(page: pymupdf.Page, matrix: pymupdf.Matrix) -> Image.Image:
    def render() -> Image.Image:
        pixmap = page.get_pixmap(matrix=matrix, alpha=False)
        return Image.frombytes("RGB", (pixmap.width, pixmap.height), pixmap.samples)

    return render() if _raster_timer is None else _raster_timer(render)


def read_page_layout(path: Path, number: int) -> PageLayout | None:
    """The layout of page `number` (1-based) for the text-layer gate; None without text."""
    with _MUPDF_LOCK:
        try:
            opened = _open(path)
            has_text = bool(opened.doc[number - 1].get_text().strip())
        except Exception as exc:
            raise RenderError(f"page {number} text layer unreadable: {exc}") from exc
        return _layout_or_none(opened, number) if has_text else None


def read_page_words(path: Path, number: int) -> PageWords:
    """The words of page `number` (1-based) with their boxes, for the text layer's positions."""
    with _MUPDF_LOCK:
        try:
            return _words(_open(path).doc[number - 1])
        except Exception as exc:
            raise RenderError(f"page {number} text layer unreadable: {exc}") from exc


def _words(page: pymupdf.Page) -> PageWords:
    """The page's words a reader sees, in reading order, each with its line numbered across
    the page."""
    lines: dict[tuple[int, int], int] = {}
    words = []
    places = seen_places(page)
    for x0, y0, x1, y1, word, block, line, _ in page.get_text("words", sort=True):
        if not places.holds((x0, y0, x1, y1)):
            continue
        number = lines.setdefault((block, line), len(lines))
        words.append((float(x0), float(y0), float(x1), float(y1), str(word), number))
    return tuple(words)


# A model's own size is never this far past a page's: a bound on what rasterize allocates.
_MAX_RASTER_SIDE = 12_000


def rasterize(path: Path, number: int, dpi: float) -> Image.Image:
    """Page `number` (1-based) at exactly `dpi` (a model's own size), bounded for safety."""
    with _MUPDF_LOCK:
        try:
            page = _open(path).doc[number - 1]
            zoom = min(dpi / 72, _MAX_RASTER_SIDE / max(page.rect.width, page.rect.height))
            return _pixels(page, pymupdf.Matrix(zoom, zoom))
        except Exception as exc:  # a damaged page must fail alone, whatever MuPDF raised
            raise RenderError(f"page {number} failed to render at {dpi:.0f} DPI: {exc}") from exc


def _layout_or_none(opened: _OpenDocument, number: int) -> PageLayout | None:
    """The page's layout; None (the plain text layer is used as it is) when MuPDF balks."""
    try:
        return read_layout(opened.doc, number - 1, opened.edges_read)
    except Exception as exc:  # structure is a bonus: a page whose layout fails keeps its text
        log.warning("page %d: text layout unreadable (%s); plain text layer used", number, exc)
        return None


def read_page_tables(path: Path, number: int) -> list[TableGrid]:
    """The tables of page `number` (1-based) that PyMuPDF's table finder outlines."""
    with _MUPDF_LOCK:
        try:
            return read_tables(_open(path).doc[number - 1])
        except Exception as exc:  # the finder failing on odd drawings costs the tables only
            log.warning("page %d of %s: table finder failed (%s); no tables", number, path, exc)
            return []


def read_text_layer(path: Path, number: int) -> str:
    """The PDF's own text for page `number` (1-based), without rendering."""
    with _MUPDF_LOCK:
        try:
            return str(_open(path).doc[number - 1].get_text())
        except Exception as exc:
            raise RenderError(f"page {number} text layer unreadable: {exc}") from exc


def _open(path: Path) -> _OpenDocument:
    key = str(path)
    opened = _OPEN_DOCS.get(key)
    if opened is None:
        try:
            opened = _OpenDocument(pymupdf.open(path, filetype="pdf"))
        except Exception as exc:  # its message names the file: the page's error must not
            raise RuntimeError(_unplaced(exc, path)) from exc
        _OPEN_DOCS[key] = opened
        if len(_OPEN_DOCS) > _MAX_OPEN_DOCS:
            _OPEN_DOCS.popitem(last=False)[1].doc.close()
    _OPEN_DOCS.move_to_end(key)
    return opened


def _unplaced(exc: Exception, path: Path) -> str:
    """MuPDF's message without the server's path to the file (`Failed to open file '/srv/
    uploads/3f.../a.pdf'`): a caller reads these errors, and where Folio keeps files is not
    theirs to know. The file's own name stays."""
    text = str(exc)
    for where in {str(path), str(path.resolve())}:
        text = text.replace(where, path.name)
    return text


def close_documents() -> None:
    """Close every cached document (before a file is rewritten, or at exit)."""
    with _MUPDF_LOCK:
        while _OPEN_DOCS:
            _OPEN_DOCS.popitem()[1].doc.close()
