"""Turning a bucket prefix, or a manifest of object URIs, into a job: one listing page at a time.

A prefix of 100,000 objects is never held at once: each listing page (at most
`storage_list_page_size` objects) becomes document rows, is flushed and let go before the next
is asked for. Each object is read once here, through the bounded cache and on
`storage_ingest_threads` threads, to count its pages and record its SHA-256; an object already
done with the same ETag into the same results location is skipped without being read.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from app.db import documents, jobs
from app.db.engine import Database
from app.db.models import Document
from app.domain import DocumentStatus
from app.errors import DocumentError, FolioError, ObjectRefused, StoreUnavailable
from app.pdf.render import DocumentLimits, inspect_document
from app.pipeline.ingest import (
    IngestResult,
    add_page_rows,
    add_pages,
    fail_document,
    sha256_of,
    skip_document,
)
from app.storage import DocumentCache, StoredObject, Stores, is_store_uri
from app.storage.access import NOT_ALLOWED, AccessPolicy, in_listing, listing_prefix
from app.storage.base import ObjectUri

_MAX_INT = 2**31 - 1  # documents.size_bytes is a 32-bit integer
_MAX_MANIFEST_BYTES = 64 * 2**20
EVERYWHERE = AccessPolicy()  # `folio run`: the operator's own credentials and choice


@dataclass(frozen=True)
class RefusedObject:
    """A manifest line whose object the store would not describe (missing, denied)."""

    uri: str
    error: DocumentError


Listed = StoredObject | RefusedObject


def is_manifest(source: str) -> bool:
    """A manifest is a text file (local, or an object) with one s3:// URI per line."""
    return source.lower().endswith(".txt")


def is_stored_source(source: str) -> bool:
    return is_store_uri(source) or is_manifest(source)


def listed_pages(
    stores: Stores, source: str, page_size: int, policy: AccessPolicy = EVERYWHERE
) -> Iterator[Sequence[Listed]]:
    """The objects a source names, a listing page at a time: those under a prefix (taken as a
    folder: `s3://b/docs` is `docs/`), or a manifest's lines, each once. What `policy` does
    not admit is never asked of the store: a listed object outside it is left out, a manifest
    line outside it is a refused object (`not_allowed`)."""
    if not is_manifest(source):
        prefix = listing_prefix(source) if is_store_uri(source) else source
        for listed in stores.for_uri(source).list_pages(prefix, page_size):
            kept = [o for o in listed if in_listing(o.uri, prefix) and policy.admits(o.uri)]
            yield [_storable(o) for o in kept]
        return
    page: list[Listed] = []
    for uri in _unique(_manifest_lines(stores, source)):
        page.append(_described(stores, uri, policy))
        if len(page) == page_size:
            yield page
            page = []
    if page:
        yield page


def _manifest_lines(stores: Stores, source: str) -> Iterator[str]:
    if is_store_uri(source):
        store = stores.for_uri(source)
        buffer = io.BytesIO()
        store.read(store.head(source), buffer, _MAX_MANIFEST_BYTES)
        try:
            text: Iterable[str] = buffer.getvalue().decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise ObjectRefused("not_a_manifest", f"{source} is not UTF-8 text") from exc
    else:
        text = open(source, encoding="utf-8")  # noqa: SIM115 - closed when the generator ends
    try:
        for line in text:
            uri = line.strip()
            if uri and not uri.startswith("#"):
                yield uri
    except UnicodeDecodeError as exc:
        raise ObjectRefused("not_a_manifest", f"{source} is not UTF-8 text") from exc
    finally:
        if hasattr(text, "close"):
            text.close()


def _unique(lines: Iterable[str]) -> Iterator[str]:
    """A manifest's lines without repeats: a URI listed twice is one document."""
    seen: set[str] = set()
    for line in lines:
        if line not in seen:
            seen.add(line)
            yield line


def _storable(stored: StoredObject) -> Listed:
    """The object, or a refusal when its key holds a NUL: no database text column (PostgreSQL's
    least of all) takes one, so the document is recorded under the key with `%00` for it."""
    if "\x00" not in stored.uri:
        return stored
    reason = "the object's key holds a NUL character, which Folio cannot record"
    return RefusedObject(
        stored.uri.replace("\x00", "%00"), DocumentError("unsupported_key", reason)
    )


def _described(stores: Stores, uri: str, policy: AccessPolicy) -> Listed:
    if "\x00" in uri:
        return _storable(StoredObject(uri, 0))
    if not is_store_uri(uri):
        return RefusedObject(uri, DocumentError("not_a_uri", f"not an s3:// URI: {uri!r}"))
    if not policy.admits(uri):  # refused before the store is asked: no answer tells it exists
        reason = "not under any of the server's allowed URIs"
        return RefusedObject(uri, DocumentError(NOT_ALLOWED, reason))
    try:
        return stores.for_uri(uri).head(uri)
    except ObjectRefused as exc:
        return RefusedObject(uri, exc)


def document_name_of(uri: str, source: str) -> str:
    """A flat name: the key under the listed prefix (the whole key for a manifest), `/` -> `__`."""
    where = ObjectUri.parse(uri) if is_store_uri(uri) else ObjectUri("", uri)
    key = where.key
    if not is_manifest(source) and is_store_uri(source):
        key = key.removeprefix(ObjectUri.parse(source).key)
    parts = [p for p in PurePosixPath(key).parts if p not in ("/", "..", ".")]
    if parts and parts[-1].lower().endswith(".pdf"):
        parts[-1] = parts[-1][:-4]
    return "__".join(parts) or "object"


class _Names:
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


class TooManyObjects(FolioError):
    """The source names more objects than the caller allows in one job."""

    category = "too_many_objects"


class TooManyPages(FolioError):
    """The source's documents hold more pages than the caller allows in one job."""

    category = "too_many_pages"


class NoObjects(FolioError):
    """The source names no PDF at all (an empty or mistyped prefix, an empty manifest)."""

    category = "no_objects"


def ingest_stored(
    db: Database,
    stores: Stores,
    cache: DocumentCache,
    source: str,
    *,
    out_dir: str | None,
    plan_name: str,
    limits: DocumentLimits,
    page_size: int,
    threads: int = 8,
    force: bool = False,
    job_fields: dict[str, Any] | None = None,
    max_documents: int | None = None,
    max_pages: int | None = None,
    policy: AccessPolicy = EVERYWHERE,
    allow_empty: bool = True,
) -> IngestResult:
    """Create the job, its documents and pages from stored objects; an object that cannot be
    read or processed becomes a failed document with the reason, and the job goes on.
    The objects of a listing page are read and counted on `threads` threads at once.
    More than `max_documents` objects raise TooManyObjects, more than `max_pages` pages in
    all TooManyPages, none at all NoObjects (unless `allow_empty`): no job is made then.
    Only what `policy` admits is read (see `listed_pages`)."""
    names = _Names()
    count = partial(_count, cache, limits)
    owner = (job_fields or {}).get("api_key_id")
    with (
        ThreadPoolExecutor(max(1, threads), thread_name_prefix="folio-ingest") as pool,
        db.session() as session,
    ):
        job = jobs.create_job(session, source, out_dir, plan_name, **(job_fields or {}))
        result = IngestResult(job_id=job.id)
        for page in listed_pages(stores, source, page_size, policy):
            to_read: list[tuple[Document, StoredObject]] = []
            for listed in page:
                if max_documents is not None and result.documents >= max_documents:
                    raise TooManyObjects(f"more than {max_documents} objects in one job")
                name = names.take(document_name_of(listed.uri, source))
                document = _admit(session, result, listed, name, out_dir, force, owner)
                if document is not None and isinstance(listed, StoredObject):
                    to_read.append((document, listed))
            counted = pool.map(count, [stored for _, stored in to_read])
            for (document, _), outcome in zip(to_read, counted, strict=True):
                if isinstance(outcome, DocumentError):
                    fail_document(result, document, outcome)
                else:
                    document.sha256, document.page_count = outcome
                    add_page_rows(session, result, document)
            if max_pages is not None and len(result.page_ids) > max_pages:
                raise TooManyPages(
                    f"the job has more than {max_pages} pages, over the pages per job limit"
                )
            session.flush()
            session.expunge_all()  # this page's rows are written; memory holds only the next
        if not allow_empty and result.documents == 0:
            raise NoObjects(f"no PDF under {source}")
    return result


def ingest_uploaded(
    db: Database,
    uploaded: Iterable[tuple[StoredObject, Path, str]],
    *,
    source: str,
    plan_name: str,
    limits: DocumentLimits,
    job_fields: dict[str, Any] | None = None,
) -> IngestResult:
    """A job of files just written to a store (API uploads): (the object, the local file it
    was written from, its name). Pages are counted from the local file; workers read the
    object."""
    with db.session() as session:
        job = jobs.create_job(session, source, None, plan_name, **(job_fields or {}))
        result = IngestResult(job_id=job.id)
        for stored, path, name in uploaded:
            document = _document(result, stored, name)
            session.add(document)
            result.documents += 1
            document.sha256 = sha256_of(path)
            add_pages(session, result, document, path, limits)
    return result


def _document(result: IngestResult, stored: StoredObject, name: str) -> Document:
    return Document(
        job_id=result.job_id,
        path=stored.uri,
        name=name,
        etag=stored.etag,
        version_id=stored.version_id,
        size_bytes=min(stored.size, _MAX_INT),
        status=DocumentStatus.PENDING,
    )


def _admit(
    session: Any,
    result: IngestResult,
    listed: Listed,
    name: str,
    out_dir: str | None,
    force: bool,
    owner: int | None,
) -> Document | None:
    """The object's document row; returned when its object is still to be read, None when it
    is settled already (refused by the store, or done earlier with the same ETag for the same
    owner: `owner` is the job's API key, None for the CLI's)."""
    stored = listed if isinstance(listed, StoredObject) else None
    document = _document(result, stored or StoredObject(listed.uri, 0), name)
    session.add(document)
    result.documents += 1
    if isinstance(listed, RefusedObject):
        fail_document(result, document, listed.error)
        return None
    assert stored is not None
    if out_dir and stored.etag and not force:
        done = documents.find_done_object(
            session, stored.uri, stored.etag, out_dir, api_key_id=owner
        )
        if done:
            skip_document(result, document, done, "already done (same object and ETag, same out)")
            return None
    return document


def _count(
    cache: DocumentCache, limits: DocumentLimits, stored: StoredObject
) -> tuple[str | None, int] | DocumentError:
    """Read one object through the cache; its SHA-256 and page count, or why it cannot be
    processed. Runs on the ingest threads; the copy may be evicted as soon as this returns."""
    try:
        if stored.size > limits.max_bytes:  # refused before a byte is fetched
            raise ObjectRefused(
                "too_large",
                f"object is {stored.size / 2**20:.1f} MiB, over the "
                f"{limits.max_bytes / 2**20:.1f} MiB limit (max_file_mb)",
            )
        path = cache.local_path(stored)
        return sha256_of(path), inspect_document(path, limits)
    except StoreUnavailable as exc:
        return DocumentError(exc.category, str(exc))
    except DocumentError as exc:  # ObjectRefused is one: missing, denied, changed, too large
        return exc
