"""Which store a URI names, with one client per kind made on first use."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from app.storage.base import ObjectStore, is_store_uri
from app.storage.folder import FolderStore

if TYPE_CHECKING:
    from app.settings import Settings
    from app.storage.s3 import S3Store


class Stores:
    """`for_uri`: the S3 store for `s3://...`, the folder store for a local path."""

    def __init__(
        self,
        endpoint_url: str | None = None,
        region: str | None = None,
        addressing_style: str = "auto",
        timeout_s: float = 30.0,
    ) -> None:
        self._s3_args = (endpoint_url, region, addressing_style, timeout_s)
        self._s3: S3Store | None = None
        self._folder = FolderStore()
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> Stores:
        return cls(
            settings.s3_endpoint_url,
            settings.s3_region,
            settings.s3_addressing_style,
            settings.storage_timeout_s,
        )

    def for_uri(self, uri: str) -> ObjectStore:
        return self.s3() if is_store_uri(uri) else self._folder

    def s3(self) -> S3Store:
        with self._lock:
            if self._s3 is None:
                from app.storage.s3 import S3Store

                self._s3 = S3Store(*self._s3_args)
            return self._s3
