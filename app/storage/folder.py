"""The local-disk store: a folder read and written through the same interface as a bucket.
`folio run` over a folder (`/data/in` or `file:///data/in`) lists it here, and a job's results
go into a folder through it; the storage benchmark compares it with a bucket."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from app.errors import ObjectRefused
from app.storage.base import StoredObject, local_path

_CHUNK = 1 << 20


def discover_pdfs(root: Path) -> list[Path]:
    """Every `.pdf` under `root` (any case, recursively), or `root` itself when it is a file."""
    if root.is_file():
        return [root]
    found = (p for p in root.rglob("*") if p.is_file() and p.suffix.lower() == ".pdf")
    return sorted(found)


class FolderStore:
    """Objects are files; a URI is a path (or `file://` and a path); the ETag is the file's
    size and mtime. Listed objects carry plain absolute paths."""

    def list_pages(self, prefix: str, page_size: int) -> Iterator[list[StoredObject]]:
        """The PDFs under the folder `prefix` (or the file `prefix` itself), in path order."""
        page: list[StoredObject] = []
        for path in discover_pdfs(local_path(prefix).resolve()):
            try:
                page.append(self.head(str(path)))
            except ObjectRefused:
                continue  # gone since the folder was read: not in the listing
            if len(page) == page_size:
                yield page
                page = []
        if page:
            yield page

    def head(self, uri: str) -> StoredObject:
        path = local_path(uri)
        try:
            facts = path.stat()
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise ObjectRefused("object_missing", f"file {path} does not exist") from exc
        return StoredObject(str(path), facts.st_size, f"{facts.st_size}-{facts.st_mtime_ns}")

    def read(self, stored: StoredObject, sink: BinaryIO, max_bytes: int) -> None:
        if stored.etag and self.head(stored.uri).etag != stored.etag:
            raise ObjectRefused("object_changed", f"file {stored.uri} changed since it was listed")
        read = 0
        with open(local_path(stored.uri), "rb") as handle:
            while chunk := handle.read(_CHUNK):
                read += len(chunk)
                if read > max_bytes:
                    raise ObjectRefused("too_large", f"file {stored.uri} is over the size limit")
                sink.write(chunk)

    def write(self, uri: str, data: bytes, content_type: str) -> StoredObject:
        path = local_path(uri)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return self.head(uri)

    def write_file(self, uri: str, path: Path, content_type: str) -> StoredObject:
        target = local_path(uri)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        return self.head(uri)
