"""The original PDF, opened to take an invisible text layer, and written back: PyMuPDF's seam.

The original's bytes stay as they are: the layer is an incremental update after them (new
objects, and each changed page's `Contents` array and font resources). A page's own content
streams are untouched; the layer comes after them, with a `q` before them and a `Q` after, so
whatever graphics state they leave does not move it. A PDF that cannot take one honestly is
refused with the reason: an encrypted one, a signed one (an update after a signature voids it
for most readers), and one MuPDF had to repair (its structure is not what its bytes say).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pymupdf

from app.errors import FolioError
from app.searchable import font
from app.searchable.layer import Matrix

# PyMuPDF's PDF_ENCRYPT_KEEP (0; not in its type stubs): an incremental update keeps the file's
# own encryption settings, as it must (the file has none: an encrypted one is refused).
_ENCRYPT_KEEP = 0


_DAMAGED = "the PDF is damaged (its cross-reference table had to be repaired to read it)"


class PdfNotWritten(FolioError):
    """No searchable PDF for this document; the reason says why."""

    category = "pdf_not_written"


def _refusal(doc: pymupdf.Document) -> str | None:
    for page in doc.pages():  # MuPDF repairs a broken file as it loads what it misplaces
        page.get_contents()
    if doc.needs_pass or doc.is_encrypted or (doc.metadata or {}).get("encryption"):
        return "the PDF is encrypted (Folio adds no text layer to an encrypted file)"
    if doc.get_sigflags() > 0:
        return "the PDF is signed; adding a text layer would void its signatures"
    if doc.is_repaired:
        return _DAMAGED
    return None


class LayeredPdf:
    """A copy of the original being given its layer; `close` always, `finish` for the bytes."""

    def __init__(self, original: Path) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="folio-searchable-")
        self.path = Path(self._dir.name) / "document.pdf"
        self.path.write_bytes(original.read_bytes())
        try:
            self.doc = pymupdf.open(self.path, filetype="pdf")
        except (RuntimeError, ValueError) as exc:
            self._dir.cleanup()
            raise PdfNotWritten(f"the PDF cannot be opened: {exc}") from exc
        if (reason := _refusal(self.doc)) is not None:
            self.close()
            raise PdfNotWritten(reason)
        self.font = self.doc.get_new_xref()
        self.doc.update_object(self.font, "<< >>")
        self.codes = font.CodeMap()
        self._begin: int | None = None

    @property
    def page_count(self) -> int:
        return int(self.doc.page_count)

    def page_frame(self, number: int) -> tuple[tuple[float, float], Matrix]:
        """Page `number`'s size as shown, in points, and the matrix from there to user space."""
        page = self.doc[number - 1]
        to_user = ~page.transformation_matrix
        return (page.rect.width, page.rect.height), tuple(to_user)

    def own_text(self, number: int) -> str:
        """The text page `number` carries in its own content."""
        return str(self.doc[number - 1].get_text())

    def add_layer(self, number: int, stream: bytes) -> None:
        """Page `number`'s own content between `q` and `Q`, then `stream`."""
        page = self.doc[number - 1]
        if self._begin is None:
            self._begin = self._stream(b"q\n")
        layer = self._stream(b"Q\n" + stream)
        kind, value = self.doc.xref_get_key(page.xref, "Contents")
        own = value[1:-1].strip() if kind == "array" else value if kind == "xref" else ""
        self.doc.xref_set_key(page.xref, "Contents", f"[{self._begin} 0 R {own} {layer} 0 R]")
        self._own_resources(page)
        self._name_font(page)

    def _name_font(self, page: pymupdf.Page) -> None:
        """The font under the page's `/Resources /Font`, through whichever of the two is an
        object of its own (MuPDF sets a key path only through direct dictionaries)."""
        holder, prefix = page.xref, "Resources/"
        kind, value = self.doc.xref_get_key(page.xref, "Resources")
        if kind == "xref":
            holder, prefix = int(value.split()[0]), ""
        kind, value = self.doc.xref_get_key(holder, prefix + "Font")
        if kind == "xref":
            holder, prefix = int(value.split()[0]), ""
        else:
            prefix += "Font/"
        self.doc.xref_set_key(holder, prefix + font.RESOURCE, f"{self.font} 0 R")

    def _own_resources(self, page: pymupdf.Page) -> None:
        """A page whose resources are inherited gets them named on itself, so the font can be
        added (the inherited dictionary stays shared where it is an object of its own)."""
        if self.doc.xref_get_key(page.xref, "Resources")[0] != "null":
            return
        parent = self.doc.xref_get_key(page.xref, "Parent")
        while parent[0] == "xref":
            xref = int(parent[1].split()[0])
            kind, value = self.doc.xref_get_key(xref, "Resources")
            if kind != "null":
                self.doc.xref_set_key(page.xref, "Resources", value)
                return
            parent = self.doc.xref_get_key(xref, "Parent")
        self.doc.xref_set_key(page.xref, "Resources", "<< >>")

    def _stream(self, data: bytes, dictionary: str = "<< >>") -> int:
        xref = self.doc.get_new_xref()
        self.doc.update_object(xref, dictionary)
        self.doc.update_stream(xref, data, compress=True)
        return int(xref)

    def finish(self) -> bytes:
        """The original's bytes with the layer appended as an incremental update."""
        if self.doc.is_repaired:  # found broken only as a page was read
            raise PdfNotWritten(_DAMAGED)
        if self._begin is None:  # no page took a layer: the original as it is
            return self.path.read_bytes()
        self._write_font()
        self.doc.save(self.path, incremental=True, encryption=_ENCRYPT_KEEP)
        return self.path.read_bytes()

    def _write_font(self) -> None:
        ttf = font.glyphless_ttf()
        font_file = self._stream(ttf, f"<< /Length1 {len(ttf)} >>")
        descriptor = self.doc.get_new_xref()
        self.doc.update_object(descriptor, font.descriptor(font_file))
        gid_map = self._stream(font.cid_to_gid_map())
        descendant = self.doc.get_new_xref()
        self.doc.update_object(descendant, font.cid_font(descriptor, gid_map))
        to_unicode = self._stream(self.codes.to_unicode())
        self.doc.update_object(self.font, font.type0_font(descendant, to_unicode))

    def close(self) -> None:
        self.doc.close()
        self._dir.cleanup()
