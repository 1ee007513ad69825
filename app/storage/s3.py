"""The S3-compatible store (AWS S3, MinIO, Ceph, moto's server) through boto3.

Endpoint, region and credentials come from the standard AWS configuration chain (environment,
`~/.aws/config` and `credentials`, instance roles); `s3_endpoint_url` and `s3_region` only
override the first two. Nothing here logs or stores a credential.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from app.errors import MissingExtraError, ObjectRefused, StoreUnavailable
from app.storage.base import ObjectUri, StoredObject
from app.storage.options import S3Options

_CHUNK = 1 << 20
# What S3 answers for each refusal, and the category the document gets.
_REFUSALS = {
    "NoSuchKey": "object_missing",
    "NoSuchBucket": "bucket_missing",
    "AccessDenied": "access_denied",
    "Forbidden": "access_denied",
    "403": "access_denied",
    "PreconditionFailed": "object_changed",
    "412": "object_changed",
    "NoSuchVersion": "object_changed",
    "404": "object_missing",  # HEAD's answer, after the bucket was found (see `head`)
}


def _boto3() -> Any:
    try:
        import boto3
        import botocore.config
    except ImportError as exc:  # the `s3` extra
        raise MissingExtraError("s3:// locations need boto3: pip install 'folio[s3]'") from exc
    return boto3, botocore.config


def is_pdf_key(key: str) -> bool:
    return key.lower().endswith(".pdf") and not key.endswith("/")


class S3Store:
    """One boto3 client (thread-safe) for every bucket this process reads or writes."""

    def __init__(self, options: S3Options) -> None:
        boto3, config = _boto3()
        session = boto3.session.Session(region_name=options.region)
        self.client = session.client(
            "s3",
            endpoint_url=options.endpoint_url,
            config=config.Config(
                connect_timeout=options.timeout_s,
                read_timeout=options.timeout_s,
                # Folio's own backoff (DocumentCache, the tasks) does the retrying.
                retries={"max_attempts": 1, "mode": "standard"},
                s3={"addressing_style": options.addressing_style},
            ),
        )

    def list_pages(self, prefix: str, page_size: int) -> Iterator[list[StoredObject]]:
        where = ObjectUri.parse(prefix)
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=where.bucket, Prefix=where.key, PaginationConfig={"PageSize": page_size}
        )
        with _translated(str(where)):
            for page in pages:
                yield [
                    StoredObject(
                        str(ObjectUri(where.bucket, item["Key"])),
                        int(item["Size"]),
                        item.get("ETag"),
                    )
                    for item in page.get("Contents", [])
                    if is_pdf_key(item["Key"])
                ]

    def head(self, uri: str) -> StoredObject:
        where = ObjectUri.parse(uri)
        with _translated(uri):
            try:
                found = self.client.head_object(Bucket=where.bucket, Key=where.key)
            except Exception as exc:
                if _code(exc) == "404":  # HEAD has no body to tell a key from a bucket
                    self._check_bucket(where.bucket)
                raise
        return StoredObject(
            uri, int(found["ContentLength"]), found.get("ETag"), found.get("VersionId")
        )

    def read(self, stored: StoredObject, sink: BinaryIO, max_bytes: int) -> None:
        where = ObjectUri.parse(stored.uri)
        asked: dict[str, Any] = {"Bucket": where.bucket, "Key": where.key}
        if stored.version_id:
            asked["VersionId"] = stored.version_id
        if stored.etag:
            asked["IfMatch"] = stored.etag
        with _translated(stored.uri):
            answer = self.client.get_object(**asked)
            size = int(answer.get("ContentLength") or 0)
            if size > max_bytes:
                answer["Body"].close()
                raise _too_large(stored.uri, size, max_bytes)
            read = 0
            for chunk in answer["Body"].iter_chunks(_CHUNK):
                read += len(chunk)
                if read > max_bytes:
                    raise _too_large(stored.uri, read, max_bytes)
                sink.write(chunk)

    def write(self, uri: str, data: bytes, content_type: str) -> StoredObject:
        where = ObjectUri.parse(uri)
        with _translated(uri):
            done = self.client.put_object(
                Bucket=where.bucket, Key=where.key, Body=data, ContentType=content_type
            )
        return StoredObject(uri, len(data), done.get("ETag"), done.get("VersionId"))

    def write_file(self, uri: str, path: Path, content_type: str) -> StoredObject:
        where = ObjectUri.parse(uri)
        with _translated(uri), open(path, "rb") as handle:
            self.client.put_object(
                Bucket=where.bucket, Key=where.key, Body=handle, ContentType=content_type
            )
        return self.head(uri)

    def _check_bucket(self, bucket: str) -> None:
        try:
            self.client.head_bucket(Bucket=bucket)
        except Exception as exc:
            if _code(exc) == "404":
                raise ObjectRefused("bucket_missing", f"bucket {bucket!r} does not exist") from exc


def _too_large(uri: str, size: int, limit: int) -> ObjectRefused:
    return ObjectRefused(
        "too_large",
        f"object {uri} is {size / 2**20:.1f} MiB or more, over the "
        f"{limit / 2**20:.1f} MiB limit (max_file_mb)",
    )


def _code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    return str(response.get("Error", {}).get("Code") or "") or None


class _translated:
    """Turns botocore's errors into Folio's: a refusal of one object, or an outage."""

    def __init__(self, uri: str) -> None:
        self.uri = uri

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None or isinstance(exc, ObjectRefused | StoreUnavailable):
            return
        from botocore.exceptions import BotoCoreError, ClientError
        from urllib3.exceptions import HTTPError

        if isinstance(exc, ClientError):
            code = _code(exc) or ""
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            category = _REFUSALS.get(code)
            if category is None and status == 403:
                category = "access_denied"
            if category is not None:
                raise ObjectRefused(category, _refusal_text(category, self.uri)) from exc
            if status >= 500 or status == 0:
                raise StoreUnavailable(f"object store answered {status} for {self.uri}") from exc
            raise ObjectRefused("store_error", f"{self.uri}: {code or status}") from exc
        if isinstance(exc, BotoCoreError | HTTPError | OSError):
            # Connection refused or dropped, a timeout, a body cut short: try again later.
            raise StoreUnavailable(f"object store unreachable for {self.uri}: {exc}") from exc


def _refusal_text(category: str, uri: str) -> str:
    return {
        "object_missing": f"object {uri} does not exist",
        "bucket_missing": f"the bucket of {uri} does not exist",
        "access_denied": f"access to {uri} is denied for this machine's credentials",
        "object_changed": f"object {uri} changed since it was listed (its ETag differs)",
    }[category]
