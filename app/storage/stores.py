"""Which store a URI names, with one client per kind made on first use."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from app.storage.base import ObjectStore, is_store_uri
from app.storage.folder import FolderStore
from app.storage.options import S3Options

if TYPE_CHECKING:
    from app.storage.s3 import S3Store


class Stores:
    """`for_uri`: the S3 store for `s3://...`, the folder store for a `file://` URI or a path."""

    def __init__(self, s3: S3Options | None = None) -> None:
        self._s3_options = s3 or S3Options()
        self._s3: S3Store | None = None
        self._folder = FolderStore()
        self._lock = threading.Lock()

    def for_uri(self, uri: str) -> ObjectStore:
        return self._s3_store() if is_store_uri(uri) else self._folder

    def _s3_store(self) -> S3Store:
        with self._lock:
            if self._s3 is None:
                from app.storage.s3 import S3Store

                self._s3 = S3Store(self._s3_options)
            return self._s3
