"""A worker's bounded local copy of stored documents: streamed in, checksummed, retried.

A document in a store is fetched once per machine (the file is named after its URI and ETag,
so every page of it, on any thread or worker process here, shares the copy), written under a
temporary name and renamed only when whole and its SHA-256 matches what ingest recorded.
The least recently used copies are deleted once the folder holds more than its cap, except the
last ones handed out; a copy already open for rendering stays readable (POSIX keeps an
unlinked open file).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import random
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from app.errors import ObjectRefused, StoreUnavailable
from app.storage.base import StoredObject, is_store_uri
from app.storage.options import CacheOptions, StorageOptions
from app.storage.stores import Stores

log = logging.getLogger(__name__)
_RECENT = 64


def backoff_s(attempt: int, max_delay_s: float) -> float:
    """0.25 s, 0.5 s, 1 s ... capped at `max_delay_s`, with +-20% jitter."""
    return min(max_delay_s, 0.25 * 2**attempt) * random.uniform(0.8, 1.2)


class _Hashing:
    """A file that hashes what is written to it."""

    def __init__(self, sink: BinaryIO) -> None:
        self.sink = sink
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.sink.write(data)


class DocumentCache:
    """Local paths for documents, whichever store holds them."""

    def __init__(
        self,
        stores: Stores,
        options: CacheOptions,
        sleep: Callable[[float], None] = time.sleep,
        pinned: int = _RECENT,
    ) -> None:
        self.stores = stores
        self.folder = options.folder
        self.max_bytes = options.max_bytes
        self.max_object_bytes = options.max_object_bytes
        self.retries = options.retries
        self.max_delay_s = options.max_delay_s
        self._sleep = sleep
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        # The copies handed out last: a page may not have opened its copy yet, so eviction
        # passes over these even when the cap is exceeded (it catches up as they age).
        self._recent: deque[Path] = deque(maxlen=max(1, pinned))

    @classmethod
    def of(cls, options: StorageOptions, stores: Stores | None = None) -> DocumentCache:
        """The cache the options describe, over `stores` (new ones when None)."""
        return cls(stores or Stores(options.s3), options.cache)

    def local_path(self, stored: StoredObject, sha256: str | None = None) -> Path:
        """A local file holding the document: a local document's own path, or the cached
        copy of a stored one (fetched when missing). `sha256`: what the bytes must hash to."""
        if not is_store_uri(stored.uri):
            return Path(stored.uri)
        name = hashlib.sha256(f"{stored.uri}\0{stored.etag}\0{stored.version_id}".encode())
        path = self.folder / f"{name.hexdigest()[:40]}.pdf"
        with self._lock_for(path.name):
            self._recent.append(path)
            if path.exists():
                with contextlib.suppress(OSError):
                    os.utime(path)  # recently used: evicted last
                return path
            self._fetch(stored, path, sha256)
        self._evict()
        return path

    def _fetch(self, stored: StoredObject, path: Path, sha256: str | None) -> None:
        store = self.stores.for_uri(stored.uri)
        self.folder.mkdir(parents=True, exist_ok=True)
        for attempt in range(self.retries + 1):
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".part")
            try:
                with os.fdopen(fd, "wb") as handle:
                    hashing = _Hashing(handle)
                    store.read(stored, hashing, self.max_object_bytes)  # type: ignore[arg-type]
                if sha256 and hashing.digest.hexdigest() != sha256:
                    raise ObjectRefused(
                        "object_changed",
                        f"object {stored.uri} changed since it was listed (SHA-256 differs)",
                    )
                os.replace(tmp, path)
                return
            except StoreUnavailable as exc:
                if attempt == self.retries:
                    raise
                delay = backoff_s(attempt, self.max_delay_s)
                log.warning("fetching %s failed (%s); retry in %.1f s", stored.uri, exc, delay)
                self._sleep(delay)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)

    def _evict(self) -> None:
        try:
            copies = [(p.stat().st_mtime, p.stat().st_size, p) for p in self.folder.glob("*.pdf")]
        except FileNotFoundError:
            return  # another process evicted one while we looked; the next fetch looks again
        total = sum(size for _, size, _ in copies)
        recent = set(self._recent)
        for _, size, path in sorted(copies):
            if total <= self.max_bytes:
                break
            if path not in recent:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                total -= size

    def _lock_for(self, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())
