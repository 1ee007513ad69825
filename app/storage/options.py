"""The storage room's options: small frozen sections built once from `Settings`
(`StorageOptions.of`), so that a store or a cache never holds the whole settings object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.settings import Settings


@dataclass(frozen=True)
class S3Options:
    """How to reach the S3-compatible store; credentials always come from the AWS chain."""

    endpoint_url: str | None = None  # None: AWS_ENDPOINT_URL, the config file, or AWS itself
    region: str | None = None
    addressing_style: str = "auto"
    timeout_s: float = 30.0


@dataclass(frozen=True)
class CacheOptions:
    """A worker's local copies of stored documents: where, how much, how hard to fetch."""

    folder: Path
    max_bytes: int  # all copies together; the least recently used go first
    max_object_bytes: int  # one document (max_file_mb)
    retries: int = 4
    max_delay_s: float = 8.0


@dataclass(frozen=True)
class StorageOptions:
    """Everything the storage room reads from the settings, in one place."""

    s3: S3Options
    cache: CacheOptions
    list_page_size: int = 1000
    ingest_threads: int = 8

    @classmethod
    def of(cls, settings: Settings) -> StorageOptions:
        s3 = S3Options(
            settings.s3_endpoint_url,
            settings.s3_region,
            settings.s3_addressing_style,
            settings.storage_timeout_s,
        )
        cache = CacheOptions(
            settings.storage_cache_dir,
            int(settings.storage_cache_mb * 2**20),
            int(settings.max_file_mb * 2**20),
            settings.storage_retries,
            settings.storage_retry_max_delay_s,
        )
        return cls(s3, cache, settings.storage_list_page_size, settings.storage_ingest_threads)
