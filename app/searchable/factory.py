"""The searchable-PDF writer a job's results are written with, made from the settings: the
originals read through the document cache (a stored one fetched once, checked against its
recorded digest), Tesseract at the settings' language and DPI for pages without word boxes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from app.engines.tesseract import TesseractEngine
from app.searchable.document import PdfNotWritten
from app.searchable.reading import TesseractWords
from app.searchable.writer import SearchablePdfWriter
from app.settings import Settings
from app.storage import DocumentCache, StoredObject, is_store_uri
from app.storage.options import StorageOptions


def _original(cache: DocumentCache, path: str, sha256: str | None, etag: str | None) -> Path:
    """The document's bytes as the job read them: a stored one checked as it is fetched, a
    local one here (it may have been changed or replaced since)."""
    local = cache.local_path(StoredObject(path, 0, etag), sha256)
    if not is_store_uri(path) and sha256 and _digest(local) != sha256:
        raise PdfNotWritten("the original file changed since the job read it")
    return local


def _digest(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


@contextmanager
def searchable_writer(settings: Settings, wanted: bool) -> Iterator[SearchablePdfWriter | None]:
    """A writer while the results are written (None where the job asked for no PDF)."""
    if not wanted:
        yield None
        return
    cache = DocumentCache.of(StorageOptions.of(settings))
    engine = partial(
        TesseractEngine, settings.tesseract_lang, settings.tessdata_dir, second_reader=None
    )
    words = TesseractWords(engine, settings.dpi)
    try:
        yield SearchablePdfWriter(partial(_original, cache), words, settings.textlayer_min_chars)
    finally:
        words.close()
