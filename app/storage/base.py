"""What every store offers: list a prefix page by page, read an object as it was listed, write
bytes or a local file. A location is an `s3://bucket/key` URI, a `file://` URI or a plain path."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

S3_SCHEME = "s3://"
FILE_SCHEME = "file://"


def is_store_uri(location: str) -> bool:
    """Whether `location` names an object store (`s3://...`) rather than a local path."""
    return location.startswith(S3_SCHEME)


def local_path(location: str | Path) -> Path:
    """A local location as a path: `file:///data/in` is `/data/in`; a plain path is itself."""
    text = str(location)
    return Path(text.removeprefix(FILE_SCHEME)) if text.startswith(FILE_SCHEME) else Path(text)


def child_location(prefix: str, name: str) -> str:
    """The object `name` under `prefix`: a store's prefix or a local folder."""
    if is_store_uri(prefix):
        return str(ObjectUri.parse(prefix).child(name))
    return str(local_path(prefix) / name)


@dataclass(frozen=True)
class ObjectUri:
    """`s3://bucket/key` split; `key` may be a prefix (ends with `/`) or empty."""

    bucket: str
    key: str

    @classmethod
    def parse(cls, uri: str) -> ObjectUri:
        if not is_store_uri(uri):
            raise ValueError(f"not an s3:// URI: {uri!r}")
        bucket, _, key = uri[len(S3_SCHEME) :].partition("/")
        if not bucket:
            raise ValueError(f"no bucket in {uri!r}")
        return cls(bucket, key)

    def __str__(self) -> str:
        return f"{S3_SCHEME}{self.bucket}/{self.key}"

    def child(self, name: str) -> ObjectUri:
        """The object `name` under this prefix (a `/` is put between them when missing)."""
        prefix = self.key if not self.key or self.key.endswith("/") else self.key + "/"
        return ObjectUri(self.bucket, prefix + name)


@dataclass(frozen=True)
class StoredObject:
    """An object as the store listed it: its URI, size and the identity of that content (the
    ETag, and the version where the bucket keeps versions). Reading it later checks these."""

    uri: str
    size: int
    etag: str | None = None
    version_id: str | None = None


class ObjectStore(Protocol):
    """A place documents are read from and results written to.

    Errors: `ObjectRefused` (with a category: object_missing, bucket_missing, access_denied,
    object_changed, too_large) for what retrying will not fix; `StoreUnavailable` for an outage.
    """

    def list_pages(self, prefix: str, page_size: int) -> Iterator[list[StoredObject]]:
        """The PDFs under `prefix`, a page of at most `page_size` at a time, in key order."""
        ...

    def head(self, uri: str) -> StoredObject:
        """One object's listing entry, for a manifest that names its keys."""
        ...

    def read(self, stored: StoredObject, sink: BinaryIO, max_bytes: int) -> None:
        """Copy the object's bytes into `sink`, refusing it when it changed since `stored` was
        listed or grows past `max_bytes`."""
        ...

    def write(self, uri: str, data: bytes, content_type: str) -> StoredObject:
        """Create or replace the object at `uri`."""
        ...

    def write_file(self, uri: str, path: Path, content_type: str) -> StoredObject:
        """Create or replace the object at `uri` with a local file's bytes, streamed."""
        ...
