"""Where documents and uploads are stored: the upload folder or bucket, the S3-compatible store
and a worker's local cache of it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


class StorageFields(BaseModel):
    """Uploads, the object store and the local cache."""

    upload_dir: Path = Field(
        default_factory=lambda data: data["data_dir"] / "uploads",
        description="Where the API stores uploaded files, one folder a job; data_dir/uploads "
        "by default.",
    )
    upload_uri: str | None = Field(
        default=None,
        pattern=r"^s3://[^/]+(/.*)?$",
        description="An s3:// prefix the API stores uploaded files under (one folder a job), "
        "so that workers on other machines read them from there; unset: upload_dir.",
    )
    s3_endpoint_url: str | None = Field(
        default=None,
        description="Endpoint of an S3-compatible store (MinIO, Ceph, moto); unset: "
        "AWS_ENDPOINT_URL or the AWS configuration chain. Credentials always come from that "
        "chain (AWS_ACCESS_KEY_ID, ~/.aws, an instance role), never from Folio's settings.",
    )
    s3_region: str | None = Field(
        default=None, description="The store's region; unset: AWS_REGION or ~/.aws/config."
    )
    s3_addressing_style: Literal["auto", "path", "virtual"] = Field(
        default="auto",
        description="Bucket in the path (MinIO and most self-hosted stores) or in the host name.",
    )
    result_urls_allow_private: bool = Field(
        default=False,
        description="Let a job's pre-signed result_urls PUT to loopback, private, link-local "
        "and other non-global addresses (off: a caller could make the server write to its "
        "own host or network).",
    )
    searchable_pdf: bool = Field(
        default=False,
        description="Write each document back as a searchable PDF too (`<document>.pdf` "
        "beside its .md and .json): the original with the kept text as an invisible layer "
        "on the pages that have none of their own. A job's `pdf` option (`folio run --pdf`, "
        "the API's and submit's `pdf`) overrides it.",
    )
    delivery_retries: int = Field(
        default=4,
        ge=0,
        description="Times sending a job's results (results_uri, result_urls) is tried again "
        "after an outage, with backoff, before the job reads `undelivered`; a refusal (an "
        "expired URL, a missing bucket) is not tried again.",
    )
    delivery_retry_s: float = Field(
        default=2.0,
        gt=0,
        description="Wait before the first retry of sending a job's results; doubles each time.",
    )
    storage_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Connect and read timeout of one object store request, and the "
        "deadline of one pre-signed result PUT in all (its reply included).",
    )
    storage_retries: int = Field(
        default=4,
        ge=0,
        description="Times a fetch from the object store is retried, with backoff, before the "
        "page's task is retried later (the page stays open; see db_retry_limit).",
    )
    storage_retry_max_delay_s: float = Field(
        default=8.0, gt=0, description="Longest wait between two tries of one fetch."
    )
    storage_cache_dir: Path = Field(
        default_factory=lambda data: data["data_dir"] / "cache",
        description="Where a worker keeps its local copies of stored documents; "
        "data_dir/cache by default.",
    )
    storage_cache_mb: float = Field(
        default=2048.0,
        gt=0,
        description="Cap on the local copies' total size; the least recently used go first. "
        "Keep it above the copies in use at once (storage_ingest_threads or a worker's "
        "threads, times max_file_mb).",
    )
    storage_list_page_size: int = Field(
        default=1000,
        ge=1,
        le=1000,
        description="Objects listed per request; a prefix is ingested one such page at a time.",
    )
    storage_ingest_threads: int = Field(
        default=8,
        ge=1,
        description="Objects a submit reads at once from the store to count their pages.",
    )
