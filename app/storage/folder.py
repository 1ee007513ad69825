"""The local-disk store: a folder read and written through the same interface as a bucket.
`folio run` over a folder (`/data/in` or `file:///data/in`) lists it here, and a job's results
go into a folder through it; the storage benchmark compares it with a bucket."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from app.errors import ObjectRefused, WriteFailed
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
        with _replacing(path) as handle:
            handle.write(data)
        return self.head(uri)

    def write_file(self, uri: str, path: Path, content_type: str) -> StoredObject:
        target = local_path(uri)
        with _replacing(target) as handle, open(path, "rb") as source:
            shutil.copyfileobj(source, handle, _CHUNK)
        return self.head(uri)


@contextmanager
def _replacing(path: Path) -> Iterator[BinaryIO]:
    """A file written under a temporary name beside `path` and renamed onto it (`os.replace`)
    once whole and on disk: a reader, a rerun or a crash sees the old file or the new one,
    never half of one. A write that fails (a full disk) leaves the old file as it was and no
    temporary behind, and raises WriteFailed."""
    part = path.with_name(f".{path.name[:100]}.{secrets.token_hex(6)}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # 0o666 less the umask, as a plain open() makes it (tempfile's files are 0o600).
        descriptor = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise WriteFailed(f"cannot write {path.name}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(descriptor, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(part, path)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise WriteFailed(f"cannot write {path.name}: {exc.strerror or exc}") from exc
    except BaseException:
        part.unlink(missing_ok=True)
        raise
