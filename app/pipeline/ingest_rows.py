"""A job's rows as ingest writes them: one document row per object, named, hashed, skipped when
done before, failed with its reason, and one pending page row per counted page."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from app.db import documents
from app.db.models import Document, Page
from app.domain import DocumentStatus, PageStatus
from app.errors import DocumentError, ObjectRefused, StoreUnavailable
from app.pdf.render import DocumentLimits, inspect_document
from app.storage import StoredObject, is_store_uri
from app.storage.base import ObjectUri, local_path
from app.storage.listing import Listed, RefusedObject, is_manifest

_HASH_CHUNK = 1 << 20
_MAX_INT = 2**31 - 1  # documents.size_bytes is a 32-bit integer

# What reading one object gives: its SHA-256 and page count, or why it cannot be processed.
Counted = tuple[str | None, int] | DocumentError


@dataclass
class IngestResult:
    job_id: str
    page_ids: list[int] = field(default_factory=list)
    documents: int = 0
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    resumed: bool = False  # an interrupted job taken up again, not a new one


def sha256_of(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def document_name(path: Path, root: Path) -> str:
    """A stable, flat output name: the path under the input folder, without `.pdf`."""
    relative = path.relative_to(root) if root.is_dir() else Path(path.name)
    return "__".join(relative.with_suffix("").parts)


def document_name_of(uri: str, source: str) -> str:
    """A flat name for a listed object: the path under a local folder (`document_name`), the
    key under the listed prefix (the whole key for a manifest), `/` -> `__`."""
    if not is_store_uri(uri):
        return document_name(Path(uri), local_path(source).resolve())
    key = ObjectUri.parse(uri).key
    if not is_manifest(source) and is_store_uri(source):
        key = key.removeprefix(ObjectUri.parse(source).key)
    parts = [p for p in PurePosixPath(key).parts if p not in ("/", "..", ".")]
    if parts and parts[-1].lower().endswith(".pdf"):
        parts[-1] = parts[-1][:-4]
    return "__".join(parts) or "object"


class UniqueNames:
    """Names unique within the job: a second `a` becomes `a-2`."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def take(self, base: str) -> str:
        name, n = base, 1
        while name.lower() in self._taken:
            n += 1
            name = f"{base}-{n}"
        self._taken.add(name.lower())
        return name


def admit(
    session: Any,
    result: IngestResult,
    listed: Listed,
    name: str,
    out_dir: str | None,
    force: bool,
    owner: int | None,
) -> Document | None:
    """The object's document row; returned when its object is still to be read, None when it
    is settled already: refused by the store, or done earlier into the same `out_dir` (a
    stored object with the same ETag for the same `owner`, the job's API key or None for the
    CLI's; a local file with the same content)."""
    stored = listed if isinstance(listed, StoredObject) else StoredObject(listed.uri, 0)
    document = Document(
        job_id=result.job_id,
        path=stored.uri,
        name=name,
        etag=stored.etag,
        version_id=stored.version_id,
        size_bytes=min(stored.size, _MAX_INT),
        status=DocumentStatus.PENDING,
    )
    session.add(document)
    result.documents += 1
    if isinstance(listed, RefusedObject):
        fail_document(result, document, listed.error)
        return None
    done: Document | None = None
    if not is_store_uri(stored.uri):  # a local file: hashed here, its content is its identity
        document.sha256 = sha256_of(Path(stored.uri))
        if out_dir and document.sha256 and not force:
            done = documents.find_done_document(session, document.sha256, out_dir)
            why = "already done (same content, same --out)"
    elif out_dir and stored.etag and not force:
        done = documents.find_done_object(
            session, stored.uri, stored.etag, out_dir, api_key_id=owner
        )
        why = "already done (same object and ETag, same out)"
    if done:
        skip_document(result, document, done, why)
        return None
    return document


def skip_document(result: IngestResult, document: Document, done: Document, why: str) -> None:
    """Mark `document` skipped: `done`, an earlier job's, has its pages already."""
    document.page_count = done.page_count
    document.status = DocumentStatus.SKIPPED
    document.error = why
    result.skipped.append(document.name)


def fail_document(result: IngestResult, document: Document, exc: DocumentError) -> None:
    """Mark `document` failed with the error's category and reason; the job goes on."""
    document.status = DocumentStatus.FAILED
    document.error_category = exc.category
    document.error = exc.reason
    result.failed[document.name] = exc.reason


def add_page_rows(session: Any, result: IngestResult, document: Document) -> None:
    """A pending row for each of the counted pages of `document`, which starts running."""
    document.status = DocumentStatus.RUNNING
    session.flush()
    pages = [
        Page(job_id=result.job_id, document_id=document.id, number=n, status=PageStatus.PENDING)
        for n in range(1, document.page_count + 1)
    ]
    session.add_all(pages)
    session.flush()
    result.page_ids.extend(p.id for p in pages)


def count_pages(
    limits: DocumentLimits,
    local_copy: Callable[[StoredObject], Path],
    stored: StoredObject,
    sha256: str | None,
) -> Counted:
    """Read one object from its local copy (the file itself, or a fetch into the cache); its
    SHA-256 (`sha256` when known already) and page count, or why it cannot be processed. Runs
    on the ingest threads; a cached copy may be evicted as soon as this returns."""
    try:
        if is_store_uri(stored.uri) and stored.size > limits.max_bytes:  # before a byte moves
            raise ObjectRefused(
                "too_large",
                f"object is {stored.size / 2**20:.1f} MiB, over the "
                f"{limits.max_bytes / 2**20:.1f} MiB limit (max_file_mb)",
            )
        path = local_copy(stored)
        return sha256 or sha256_of(path), inspect_document(path, limits)
    except StoreUnavailable as exc:
        return DocumentError(exc.category, str(exc))
    except DocumentError as exc:  # ObjectRefused is one: missing, denied, changed, too large
        return exc
