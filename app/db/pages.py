"""Pages outside the page path's claim and close (`page_path`): their terminal status set by
hand, their leases freed, and the reads that count them or list them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.orm import Session

from app.db.models import Document, Page
from app.domain import TERMINAL_PAGE_STATUSES, PageStatus


def finish_page(
    session: Session,
    page_id: int,
    status: PageStatus,
    *,
    text: str | None = None,
    engine: str | None = None,
    step: str | None = None,
    failure_category: str | None = None,
    error: str | None = None,
) -> None:
    """Move a page to a terminal status; a page already terminal keeps its first outcome."""
    session.execute(
        update(Page)
        .where(Page.id == page_id, Page.status.not_in(TERMINAL_PAGE_STATUSES))
        .values(
            status=status,
            text=text,
            final_engine=engine,
            final_step=step,
            failure_category=failure_category,
            error=error,
            finished_at=datetime.now(UTC),
            lease_owner=None,
            lease_until=None,
        )
    )


def open_pages(session: Session, job_id: str) -> list[int]:
    """Ids of the job's pages that are not terminal yet."""
    query = select(Page.id).where(Page.job_id == job_id)
    query = query.where(Page.status.not_in(TERMINAL_PAGE_STATUSES)).order_by(Page.id)
    return list(session.scalars(query))


def release_leases(session: Session, job_id: str) -> int:
    """Free the job's running pages for a new owner (their holder is known to be gone)."""
    return _release(session, Page.job_id == job_id)


def lease_owners(session: Session, job_id: str) -> list[tuple[int, str | None]]:
    """The job's running pages, each with who holds its lease."""
    query = select(Page.id, Page.lease_owner)
    query = query.where(Page.job_id == job_id, Page.status == PageStatus.RUNNING)
    return [(page_id, owner) for page_id, owner in session.execute(query)]


def release_pages(session: Session, page_ids: Collection[int]) -> int:
    """Free these pages, where they are still running, for a new owner."""
    return _release(session, Page.id.in_(list(page_ids))) if page_ids else 0


def _release(session: Session, which: ColumnElement[bool]) -> int:
    result = session.execute(
        update(Page)
        .where(which, Page.status == PageStatus.RUNNING)
        .values(status=PageStatus.PENDING, lease_owner=None, lease_until=None)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def count_pages_by_status(session: Session, job_id: str) -> dict[str, int]:
    """The job's pages counted per status."""
    query = select(Page.status, func.count()).where(Page.job_id == job_id).group_by(Page.status)
    return {status: int(n) for status, n in session.execute(query)}


def finished_pages(session: Session, job_id: str, since: datetime | None = None) -> list[Page]:
    """The job's terminal pages in the order they finished (those from `since` on)."""
    query = select(Page).where(Page.job_id == job_id, Page.status.in_(TERMINAL_PAGE_STATUSES))
    if since is not None:
        query = query.where(Page.finished_at >= since)
    return list(session.scalars(query.order_by(Page.finished_at, Page.id)))


def latest_finish_times(session: Session, job_id: str, limit: int) -> list[datetime]:
    """When the job's last `limit` finished pages finished, newest first."""
    query = select(Page.finished_at).where(Page.job_id == job_id, Page.finished_at.is_not(None))
    latest = session.scalars(query.order_by(Page.finished_at.desc()).limit(limit))
    return [moment for moment in latest if moment is not None]


def pages_with_documents(session: Session, job_ids: Sequence[str]) -> list[tuple[Page, Document]]:
    """The jobs' pages, each with its document, in page order (their attempts load lazily)."""
    query = (
        select(Page, Document)
        .join(Document, Page.document_id == Document.id)
        .where(Page.job_id.in_(job_ids))
        .order_by(Page.id)
    )
    return [(page, document) for page, document in session.execute(query)]


def page_outcomes(session: Session, job_id: str) -> list[tuple[Any, ...]]:
    """The job's pages in document and page order: id, document name, number, status, final
    step and failure category."""
    query = (
        select(Page.id, Document.name, Page.number, Page.status, Page.final_step)
        .add_columns(Page.failure_category)
        .join(Document, Page.document_id == Document.id)
        .where(Page.job_id == job_id)
        .order_by(Document.id, Page.number)
    )
    return [tuple(row) for row in session.execute(query)]


def jobs_page_outcomes(session: Session, job_ids: Collection[str]) -> list[tuple[Any, ...]]:
    """`page_outcomes` of several jobs, each row led by its job id."""
    query = (
        select(Page.job_id, Page.id, Document.name, Page.number, Page.status, Page.final_step)
        .add_columns(Page.failure_category)
        .join(Document, Page.document_id == Document.id)
        .where(Page.job_id.in_(list(job_ids)))
        .order_by(Document.id, Page.number)
    )
    return [tuple(row) for row in session.execute(query)]
