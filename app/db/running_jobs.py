"""Running jobs as the processes that run them see them: what distributed mode queues (a job's
open documents, a document's open pages), which jobs `folio recover` takes up and which
executor runs them, and which jobs were cancelled while their pages were in flight."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from app.db.jobs import set_job_executor
from app.db.models import Document, Job, Page
from app.db.pages import open_pages
from app.domain import TERMINAL_PAGE_STATUSES, DocumentStatus, Executor, JobStatus


@dataclass(frozen=True)
class QueuedWork:
    """What one queueing call sends: the ids, the job's plan and its options (its priority)."""

    ids: list[int]
    plan_name: str
    options: dict[str, Any] | None


def open_documents(session: Session, job_id: str) -> tuple[dict[str, Any] | None, list[int]]:
    """The job's options and its documents still running, to split into page tasks."""
    options = session.scalar(select(Job.options).where(Job.id == job_id))
    documents = session.scalars(
        select(Document.id).where(
            Document.job_id == job_id, Document.status == DocumentStatus.RUNNING
        )
    )
    return options, list(documents)


def open_pages_of_document(session: Session, document_id: int) -> QueuedWork | None:
    """The document's pages not yet terminal, in page order, with its job's plan and options;
    None when the document is gone."""
    job = session.execute(
        select(Job.plan_name, Job.options).join(Document).where(Document.id == document_id)
    ).first()
    pages = session.scalars(
        select(Page.id)
        .where(Page.document_id == document_id)
        .where(Page.status.not_in(TERMINAL_PAGE_STATUSES))
        .order_by(Page.number)
    )
    ids = list(pages)
    return None if job is None else QueuedWork(ids, job.plan_name, job.options)


def job_of_page(session: Session, page_id: int) -> str | None:
    return session.scalar(select(Page.job_id).where(Page.id == page_id))


def jobs_to_recover(session: Session, job_id: str | None) -> dict[str, QueuedWork]:
    """Each job's open pages with its plan and options, now marked as run by Celery: the
    named job, or without one every open job the embedded executor does not run. Raises
    KeyError for a named job that does not exist."""
    query = select(Job.id, Job.plan_name, Job.options)
    if job_id is None:
        query = query.where(Job.status != JobStatus.DONE, ~run_locally())
    else:
        query = query.where(Job.id == job_id)
    jobs = list(session.execute(query))
    if job_id is not None and not jobs:
        raise KeyError(f"no job {job_id!r}")
    found = {
        jid: QueuedWork(open_pages(session, jid), plan, options) for jid, plan, options in jobs
    }
    for jid in found:
        # Celery runs them from now on: the lost-task check watches them too.
        set_job_executor(session, jid, Executor.CELERY)
    return found


def run_locally() -> Any:
    """Jobs marked as run by the embedded executor (`Executor.LOCAL`)."""
    executor = Job.options["executor"].as_string()
    return and_(executor.is_not(None), executor == Executor.LOCAL.value)


def count_local_jobs_open(session: Session) -> int:
    """Open jobs that the embedded executor runs."""
    query = select(func.count(Job.id)).where(Job.status != JobStatus.DONE, run_locally())
    return int(session.scalar(query) or 0)


def cancelled_jobs(session: Session, job_ids: Collection[str]) -> set[str]:
    """Those of `job_ids` that were cancelled."""
    query = select(Job.id).where(Job.id.in_(list(job_ids)), Job.status == JobStatus.CANCELLED)
    return set(session.scalars(query))
