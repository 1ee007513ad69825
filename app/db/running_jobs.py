"""Running jobs as the processes that run them see them: what distributed mode queues (a job's
open documents, a document's open pages), which jobs `folio recover` takes up and which
executor runs them, which jobs were cancelled while their pages were in flight, and what the
lost-task check looks for (open pages no live worker holds, jobs whose finalize is due)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, and_, exists, func, or_, select
from sqlalchemy.orm import Session

from app.db.jobs import set_job_executor
from app.db.models import Document, Job, Page
from app.db.page_path import is_open
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


def run_by_celery() -> Any:
    """Jobs marked as run by Celery workers (`Executor`). A job the embedded executor runs is
    not theirs to take up; nor is a job started before the marker existed, since it may be
    one (`folio recover` takes those, and marks them)."""
    return Job.options["executor"].as_string() == Executor.CELERY.value


def count_local_jobs_open(session: Session) -> int:
    """Open jobs that the embedded executor runs."""
    query = select(func.count(Job.id)).where(Job.status != JobStatus.DONE, run_locally())
    return int(session.scalar(query) or 0)


def cancelled_jobs(session: Session, job_ids: Collection[str]) -> set[str]:
    """Those of `job_ids` that were cancelled."""
    query = select(Job.id).where(Job.id.in_(list(job_ids)), Job.status == JobStatus.CANCELLED)
    return set(session.scalars(query))


def jobs_with_open_pages(conn: Connection, job_ids: Collection[str]) -> set[str]:
    """Those of `job_ids` that still have an open page."""
    query = select(Page.job_id).where(Page.job_id.in_(list(job_ids)), is_open()).distinct()
    return set(conn.scalars(query))


@dataclass(frozen=True)
class UnleasedPage:
    """An open page of a running job that no live worker holds."""

    page_id: int
    document_id: int
    job_id: str
    plan_name: str
    options: dict[str, Any]


def unleased_open_pages(conn: Connection, limit: int) -> list[UnleasedPage]:
    """Open pages of running Celery jobs with no live lease (queued, or their task was lost)."""
    now = datetime.now(UTC)
    query = (
        select(Page.id, Page.document_id, Page.job_id, Job.plan_name, Job.options)
        .join(Job, Job.id == Page.job_id)
        .where(Job.status == JobStatus.RUNNING, run_by_celery(), is_open())
        .where(or_(Page.lease_until.is_(None), Page.lease_until < now))
        .order_by(Page.id)
        .limit(limit)
    )
    return [UnleasedPage(p, d, j, plan, opts or {}) for p, d, j, plan, opts in conn.execute(query)]


def running_jobs_without_open_pages(conn: Connection) -> list[str]:
    """Celery jobs still `running` although none of their pages is open: their finalize is
    due (a local job's own process settles it)."""
    open_page = select(Page.id).where(Page.job_id == Job.id, is_open())
    query = select(Job.id).where(Job.status == JobStatus.RUNNING, run_by_celery())
    query = query.where(~exists(open_page))
    return list(conn.scalars(query.order_by(Job.id)))
