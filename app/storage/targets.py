"""Where a job's result files go: a place in a store (a folder or an `s3://` prefix, through
its `ObjectStore`), or pre-signed PUT URLs.

Each target takes named files (`<document>.md`, `<document>.json`, `summary.json`,
`report.json`); writing one again replaces it, so publishing twice writes nothing twice.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from app.errors import ObjectRefused, StoreUnavailable
from app.outbound.calls import Call, CallFailed, call_blocking
from app.storage.access import NOT_ALLOWED, PlaceRefused
from app.storage.base import ObjectStore, child_location
from app.storage.folder import FolderStore
from app.storage.stores import Stores


class ResultTarget(Protocol):
    """A place for result files, by name."""

    where: str

    def read(self, name: str, max_bytes: int) -> bytes | None:
        """The file `name` as it is there now; None when it is missing, larger than
        `max_bytes`, or cannot be asked for (a PUT URL)."""
        ...

    def put(self, name: str, data: bytes, content_type: str) -> None:
        """Write (or replace) the file `name`, whole: a reader sees the old file or the new
        one, never part of one."""
        ...


class StoreTarget:
    """Files under a store's prefix: `s3://bucket/results/` or `/data/out` + `report.json`."""

    def __init__(self, store: ObjectStore, prefix: str) -> None:
        self.store = store
        self.prefix = prefix
        self.where = prefix

    def read(self, name: str, max_bytes: int) -> bytes | None:
        sink = io.BytesIO()
        try:
            found = self.store.head(child_location(self.prefix, name))
            if found.size > max_bytes:
                return None
            self.store.read(found, sink, max_bytes)
        except ObjectRefused:  # missing, or changed or grown while read: not the file asked
            return None
        return sink.getvalue()

    def put(self, name: str, data: bytes, content_type: str) -> None:
        # One write of the whole body: a folder's is renamed into place (folder.py), a
        # bucket's is one PUT, which S3 stores whole or not at all.
        self.store.write(child_location(self.prefix, name), data, content_type)


class PresignedTarget:
    """Files PUT to the URLs the job was given, one per file name; a name without a URL is
    not sent. The URLs are the caller's (docling-serve's pattern); no credential is needed.
    A URL to a non-global address is refused unless `allow_private` (see access.py)."""

    def __init__(
        self, urls: Mapping[str, str], timeout_s: float = 30.0, allow_private: bool = False
    ) -> None:
        self.urls = dict(urls)
        self.timeout_s = timeout_s
        self.allow_private = allow_private
        self.where = f"{len(self.urls)} pre-signed URLs"

    def read(self, name: str, max_bytes: int) -> bytes | None:
        return None  # a PUT URL cannot be asked; the earlier job's files are sent again

    def put(self, name: str, data: bytes, content_type: str) -> None:
        url = self.urls.get(name)
        if url is None:
            return
        request = Call(
            "PUT", url, data, {"Content-Type": content_type}, self.allow_private, "result URL"
        )
        try:  # checked again here: the host may resolve elsewhere since the job was taken
            answer = call_blocking(request, self.timeout_s)
        except PlaceRefused as exc:
            raise ObjectRefused(NOT_ALLOWED, f"PUT of {name} refused: {exc}") from exc
        except CallFailed as exc:  # the reply did not come whole: not delivered
            raise StoreUnavailable(f"PUT of {name} failed: {exc}") from exc
        if answer.status_code >= 500:
            raise StoreUnavailable(f"PUT of {name} answered {answer.status_code}")
        if answer.status_code >= 400:  # an expired or wrong URL: retrying will not help
            raise ObjectRefused(
                "result_url_refused", f"PUT of {name} answered {answer.status_code}"
            )


def result_target(out: str | Path, stores: Stores) -> ResultTarget:
    """The target a job's `out` names: an s3:// prefix, a `file://` URI or a local folder."""
    return StoreTarget(stores.for_uri(str(out)), str(out))


def folder_target(root: Path) -> ResultTarget:
    """A local folder as a target (no object store client is made for it)."""
    return StoreTarget(FolderStore(), str(root))
