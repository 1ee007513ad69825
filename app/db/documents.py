"""Documents: the earlier one a rerun skips for, a document's status once its pages end, and
the reads that list a job's documents."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, selectinload

from app.db.models import Document, Job, Page
from app.domain import TERMINAL_PAGE_STATUSES, DocumentStatus, PageStatus

# Failures of the document's object, not of its pages: the document carries them as its own.
STORE_FAILURES = frozenset(
    {"object_changed", "object_missing", "access_denied", "bucket_missing", "too_large"}
)


def find_done_document(
    session: Session, sha256: str, out_dir: str, before_id: int | None = None
) -> Document | None:
    """A finished document with this content, written to the same output folder.

    `before_id` finds the one a skipped document was skipped for: the newest done before it.
    """
    query = (
        select(Document)
        .join(Job)
        .where(Document.sha256 == sha256, Document.status == DocumentStatus.DONE)
        .where(Job.out_dir == out_dir)
        .order_by(Document.id.desc())
    )
    if before_id is not None:
        query = query.where(Document.id < before_id)
    return session.scalars(query).first()


def find_done_object(
    session: Session,
    uri: str,
    etag: str,
    out_dir: str,
    before_id: int | None = None,
    api_key_id: int | None = None,
) -> Document | None:
    """A finished document read from this stored object (same URI, same ETag), whose results
    went to the same place for the same owner (an API key, or none for the CLI's jobs): a
    rerun skips it without fetching it again, and never learns of another key's jobs."""
    owner = Job.api_key_id.is_(None) if api_key_id is None else Job.api_key_id == api_key_id
    query = (
        select(Document)
        .join(Job)
        .where(Document.etag == etag, Document.path == uri)
        .where(Document.status == DocumentStatus.DONE, Job.out_dir == out_dir, owner)
        .order_by(Document.id.desc())
    )
    if before_id is not None:
        query = query.where(Document.id < before_id)
    return session.scalars(query).first()


def skipped_for(session: Session, document: Document, job: Job) -> Document | None:
    """The earlier document a skipped one was skipped for: the same stored object (URI and
    ETag), or the same content, done into the same output place."""
    out_dir = job.out_dir
    if out_dir and document.etag:  # a stored object, skipped on its URI and ETag
        uri, etag, key = document.path, document.etag, job.api_key_id
        return find_done_object(session, uri, etag, out_dir, document.id, key)
    if not (document.sha256 and out_dir):
        return None
    return find_done_document(session, document.sha256, out_dir, before_id=document.id)


def settle_document(session: Session, document_id: int) -> DocumentStatus | None:
    """Give a document its final status once all its pages are terminal."""
    statuses = list(session.scalars(select(Page.status).where(Page.document_id == document_id)))
    if not statuses or any(s not in TERMINAL_PAGE_STATUSES for s in statuses):
        return None
    failed = statuses.count(PageStatus.FAILED)
    shared = _shared_store_failure(session, document_id) if failed == len(statuses) else None
    status = (
        DocumentStatus.DONE
        if failed == 0
        else DocumentStatus.FAILED
        if failed == len(statuses)
        else DocumentStatus.PARTIAL
    )
    error = f"{failed} of {len(statuses)} pages failed" if failed else None
    session.execute(
        update(Document)
        .where(Document.id == document_id)
        .values(
            status=status,
            error=shared[1] if shared else error,
            error_category=shared[0] if shared else ("pages" if failed else None),
            finished_at=datetime.now(UTC),
        )
    )
    return status


def _shared_store_failure(session: Session, document_id: int) -> tuple[str, str] | None:
    """(category, error) when every page failed for the same reason of the object store."""
    rows = set(
        session.execute(
            select(Page.failure_category, Page.error).where(Page.document_id == document_id)
        ).tuples()
    )
    categories = {category for category, _ in rows}
    if len(categories) != 1 or not categories <= STORE_FAILURES:
        return None
    category, error = sorted(rows, key=lambda row: row[1] or "")[0]
    return category or "", error or ""


def running_documents(session: Session, job_id: str) -> list[int]:
    """Ids of the job's documents that have not been settled yet."""
    query = select(Document.id).where(
        Document.job_id == job_id, Document.status == DocumentStatus.RUNNING
    )
    return list(session.scalars(query))


def count_documents(session: Session, job_id: str) -> int:
    return int(session.scalar(select(func.count()).where(Document.job_id == job_id)) or 0)


def count_documents_by_status(session: Session, job_id: str) -> dict[str, int]:
    """The job's documents counted per status."""
    query = select(Document.status, func.count()).where(Document.job_id == job_id)
    return {status: int(n) for status, n in session.execute(query.group_by(Document.status))}


def documents_with_pages(session: Session, job_id: str) -> list[Document]:
    """The job's documents in order, their pages loaded with them."""
    query = select(Document).where(Document.job_id == job_id).order_by(Document.id)
    return list(session.scalars(query.options(selectinload(Document.pages))))


def document_statuses(session: Session, job_id: str) -> list[tuple[str, str]]:
    """Each of the job's documents, in order: its name and status."""
    query = select(Document.name, Document.status).where(Document.job_id == job_id)
    return [(name, status) for name, status in session.execute(query.order_by(Document.id))]


def document_hashes(session: Session, job_id: str) -> list[tuple[str, str | None]]:
    """Each of the job's documents: its path and the SHA-256 of its content."""
    query = select(Document.path, Document.sha256).where(Document.job_id == job_id)
    return [(path, sha256) for path, sha256 in session.execute(query)]
