"""Read-only queries behind the REST API; every one is scoped to the API key that owns the job."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from app.db.documents import count_documents_by_status
from app.db.models import Document, Job, Page, WebhookDelivery
from app.db.pages import count_pages_by_status
from app.domain import PageStatus


def owned_job(session: Session, job_id: str, api_key_id: int) -> Job | None:
    """The job when this key owns it; None for a missing job and for another key's job alike."""
    return session.scalars(
        select(Job).where(Job.id == job_id, Job.api_key_id == api_key_id)
    ).first()


def list_jobs(
    session: Session, api_key_id: int, status: str | None, limit: int, offset: int
) -> tuple[list[Job], int]:
    query = select(Job).where(Job.api_key_id == api_key_id)
    if status:
        query = query.where(Job.status == status)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    page = query.order_by(Job.created_at.desc(), Job.id).limit(limit).offset(offset)
    return list(session.scalars(page)), total


def progress(session: Session, job_id: str) -> dict[str, Any]:
    """Documents and pages by status."""
    return {
        "documents": count_documents_by_status(session, job_id),
        "pages": count_pages_by_status(session, job_id),
    }


def documents(session: Session, job_id: str) -> list[Document]:
    return list(session.scalars(select(Document).where(Document.job_id == job_id).order_by("id")))


def failed_pages(session: Session, job_id: str) -> dict[int, list[Page]]:
    """The job's failed pages by document id."""
    query = select(Page).where(Page.job_id == job_id, Page.status == PageStatus.FAILED)
    by_document: dict[int, list[Page]] = {}
    for page in session.scalars(query.order_by(Page.document_id, Page.number)):
        by_document.setdefault(page.document_id, []).append(page)
    return by_document


def pages(
    session: Session, job_id: str, status: str | None, limit: int, offset: int
) -> tuple[list[Page], int]:
    query = select(Page).where(Page.job_id == job_id)
    if status:
        query = query.where(Page.status == status)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(query.order_by(Page.id).limit(limit).offset(offset))
    return list(rows), total


def pages_by_id(session: Session, job_id: str, ids: list[int]) -> dict[int, Page]:
    """The job's pages among `ids`, by id."""
    if not ids:
        return {}
    query = select(Page).where(Page.job_id == job_id, Page.id.in_(ids))
    return {p.id: p for p in session.scalars(query)}


def page_document(session: Session, job_id: str, page_id: int) -> tuple[Page, Document] | None:
    """A page of the job and its document."""
    query = (
        select(Page, Document)
        .join(Document, Page.document_id == Document.id)
        .where(Page.job_id == job_id, Page.id == page_id)
    )
    row = session.execute(query).first()
    return None if row is None else (row[0], row[1])


def page_with_attempts(session: Session, job_id: str, page_id: int) -> Page | None:
    query = (
        select(Page)
        .where(Page.job_id == job_id, Page.id == page_id)
        .options(selectinload(Page.attempts))
    )
    return session.scalars(query).first()


def deliveries(session: Session, job_id: str) -> list[WebhookDelivery]:
    """The job's webhook deliveries in the order they were made, each with its tries."""
    query = select(WebhookDelivery).where(WebhookDelivery.job_id == job_id)
    query = query.order_by(WebhookDelivery.id).options(selectinload(WebhookDelivery.tries))
    return list(session.scalars(query))
