"""Turning a source into a job: one document row per object, one page row per page.

One way in for every source: a folder (or one file), a bucket prefix and a manifest are listed
by app/storage (`listed_pages`), a listing page at a time (a prefix of 100,000 objects is never
held at once: each page becomes rows, is flushed and let go before the next is asked for).
Named files (API uploads, the upload folder) take the same road as one page. Each object is read
once here, through the bounded cache and on `threads` threads for a store, to count its pages
and record its SHA-256; an object done before into the same results place is skipped (a stored
one by its ETag, without being read; a local file by its content).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from app.db import jobs
from app.db.engine import Database
from app.db.models import Document
from app.errors import DocumentError, FolioError
from app.pdf.render import DocumentLimits
from app.pipeline.ingest_rows import (
    Counted,
    IngestResult,
    UniqueNames,
    add_page_rows,
    admit,
    count_pages,
    document_name_of,
    fail_document,
)
from app.storage import DocumentCache, StoredObject
from app.storage.access import AccessPolicy
from app.storage.listing import EVERYWHERE, Listed, is_stored_source, listed_pages
from app.storage.options import StorageOptions

__all__ = ["IngestResult", "ingest_files", "ingest_source", "ingest_uploaded"]

Named = tuple[Listed, str]  # an object (or why the store refused it) and its document's name


class TooManyObjects(FolioError):
    """The source names more objects than the caller allows in one job."""

    category = "too_many_objects"


class TooManyPages(FolioError):
    """The source's documents hold more pages than the caller allows in one job."""

    category = "too_many_pages"


class NoObjects(FolioError):
    """The source names no PDF at all (an empty or mistyped prefix, an empty manifest)."""

    category = "no_objects"


@dataclass(frozen=True)
class JobFields:
    """What the job row records besides its source: where results go, the plan, and the
    options and owner (`api_key_id`) the caller gives."""

    out_dir: str | None
    plan_name: str
    extra: dict[str, Any] | None = None

    @property
    def owner(self) -> int | None:
        return (self.extra or {}).get("api_key_id")


@dataclass(frozen=True)
class JobCaps:
    """What one job may hold: more objects raise TooManyObjects, more pages in all
    TooManyPages, none at all NoObjects (unless `allow_empty`); no job is made then. The API
    sets them; `folio run` has none."""

    max_documents: int | None = None
    max_pages: int | None = None
    allow_empty: bool = True


def ingest_source(
    db: Database,
    storage: StorageOptions,
    source: str,
    fields: JobFields,
    *,
    limits: DocumentLimits,
    force: bool = False,
    caps: JobCaps = JobCaps(),
    policy: AccessPolicy = EVERYWHERE,
) -> IngestResult:
    """A job of every PDF `source` names: a folder or file (a path or `file://`), an `s3://`
    prefix or object, or a manifest. An object that cannot be read or processed becomes a
    failed document with the reason, and the job goes on. Only what `policy` admits is read."""
    cache = DocumentCache.of(storage)
    names = UniqueNames()
    pages = (
        [(listed, names.take(document_name_of(listed.uri, source))) for listed in page]
        for page in listed_pages(cache.stores, source, storage.list_page_size, policy)
    )
    # A store's objects are fetched on several threads at once; local files are read at disk
    # speed, and counting pages holds MuPDF's lock: one thread.
    threads = storage.ingest_threads if is_stored_source(source) else 1
    count = partial(count_pages, limits, cache.local_path)
    return _ingest(db, pages, count, source, fields, threads=threads, force=force, caps=caps)


def ingest_files(
    db: Database,
    files: Iterable[tuple[Path, str]],
    source: str,
    fields: JobFields,
    *,
    limits: DocumentLimits,
    force: bool = False,
) -> IngestResult:
    """A job of named local files (API uploads, a server folder, the upload folder's batch)."""
    named = [(_local(path), name) for path, name in files]
    count = partial(count_pages, limits, _path_of)
    return _ingest(db, [named], count, source, fields, force=force)


def ingest_uploaded(
    db: Database,
    uploaded: Iterable[tuple[StoredObject, Path, str]],
    source: str,
    fields: JobFields,
    *,
    limits: DocumentLimits,
) -> IngestResult:
    """A job of files just written to a store (API uploads): (the object, the local file it
    was written from, its name). Pages are counted from the local file; workers read the
    object."""
    uploaded = list(uploaded)
    local = {stored.uri: path for stored, path, _ in uploaded}
    count = partial(count_pages, limits, lambda stored: local[stored.uri])
    named: list[Named] = [(stored, name) for stored, _, name in uploaded]
    return _ingest(db, [named], count, source, fields)


def _local(path: Path) -> StoredObject:
    """A named local file as a listing entry (a missing one is counted, and failed, later)."""
    size = path.stat().st_size if path.exists() else 0
    return StoredObject(str(path.resolve()), size)


def _path_of(stored: StoredObject) -> Path:
    return Path(stored.uri)


def _ingest(
    db: Database,
    pages: Iterable[Sequence[Named]],
    count: Callable[[StoredObject, str | None], Counted],
    source: str,
    fields: JobFields,
    *,
    threads: int = 1,
    force: bool = False,
    caps: JobCaps = JobCaps(),
) -> IngestResult:
    """Create the job, then each page's document rows, counted on `threads` threads. A cap
    passed raises, and no job is made (see `JobCaps`)."""
    with (
        ThreadPoolExecutor(max(1, threads), thread_name_prefix="folio-ingest") as pool,
        db.session() as session,
    ):
        job = jobs.create_job(
            session, source, fields.out_dir, fields.plan_name, **(fields.extra or {})
        )
        result = IngestResult(job_id=job.id)
        for page in pages:
            to_read: list[tuple[Document, StoredObject]] = []
            for listed, name in page:
                if caps.max_documents is not None and result.documents >= caps.max_documents:
                    raise TooManyObjects(f"more than {caps.max_documents} objects in one job")
                document = admit(session, result, listed, name, fields.out_dir, force, fields.owner)
                if document is not None and isinstance(listed, StoredObject):
                    to_read.append((document, listed))
            counted = pool.map(count, [s for _, s in to_read], [d.sha256 for d, _ in to_read])
            for (document, _), outcome in zip(to_read, counted, strict=True):
                if isinstance(outcome, DocumentError):
                    fail_document(result, document, outcome)
                else:
                    document.sha256, document.page_count = outcome
                    add_page_rows(session, result, document)
            if caps.max_pages is not None and len(result.page_ids) > caps.max_pages:
                raise TooManyPages(
                    f"the job has more than {caps.max_pages} pages, over the pages per job limit"
                )
            session.flush()
            session.expunge_all()  # this page's rows are written; memory holds only the next
        if not caps.allow_empty and result.documents == 0:
            raise NoObjects(f"no PDF under {source}")
    return result
