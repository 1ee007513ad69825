"""The local-disk store: a folder read and written through the same interface as a bucket
(the benchmark compares the two; `folio run` on a folder keeps its own direct path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from app.errors import ObjectRefused
from app.storage.base import StoredObject

_CHUNK = 1 << 20


class FolderStore:
    """Objects are files; a URI is a path; the ETag is the file's size and mtime."""

    def list_pages(self, prefix: str, page_size: int) -> Iterator[list[StoredObject]]:
        page: list[StoredObject] = []
        for path in sorted(Path(prefix).rglob("*")):
            if path.is_file() and path.suffix.lower() == ".pdf":
                page.append(self.head(str(path)))
                if len(page) == page_size:
                    yield page
                    page = []
        if page:
            yield page

    def head(self, uri: str) -> StoredObject:
        try:
            facts = Path(uri).stat()
        except FileNotFoundError as exc:
            raise ObjectRefused("object_missing", f"file {uri} does not exist") from exc
        return StoredObject(uri, facts.st_size, f"{facts.st_size}-{facts.st_mtime_ns}")

    def read(self, stored: StoredObject, sink: BinaryIO, max_bytes: int) -> None:
        if stored.etag and self.head(stored.uri).etag != stored.etag:
            raise ObjectRefused("object_changed", f"file {stored.uri} changed since it was listed")
        read = 0
        with open(stored.uri, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                read += len(chunk)
                if read > max_bytes:
                    raise ObjectRefused("too_large", f"file {stored.uri} is over the size limit")
                sink.write(chunk)

    def write(self, uri: str, data: bytes, content_type: str) -> StoredObject:
        path = Path(uri)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return self.head(uri)
