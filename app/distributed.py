"""Distributed mode's facade: submit a job to the queue, run one queued page, recover, settle.

The Celery tasks in `workers/` and the CLI call these; the database holds every state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError

from app.db import repo
from app.db.engine import Database
from app.db.models import Document, Job, Page
from app.domain import TERMINAL_PAGE_STATUSES, DocumentStatus, JobStatus, PageStatus
from app.jobs import JobRequest, create_job_from_folder, job_priority, settle_job
from app.pipeline.ingest import IngestResult
from app.pipeline.local import record_crash
from app.pipeline.process_page import PageBusy, PageProcessor
from app.queue import Enqueuer
from app.settings import Settings

log = logging.getLogger(__name__)

# The database is unreachable for now: retry later, never blame the page for it.
DATABASE_DOWN = (OperationalError, InterfaceError, DisconnectionError)


@dataclass(frozen=True)
class JobProgress:
    job_id: str
    status: str
    pages: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.pages.values())

    @property
    def finished(self) -> int:
        return sum(n for status, n in self.pages.items() if status in TERMINAL_PAGE_STATUSES)


def submit_job(
    settings: Settings, db: Database, enqueuer: Enqueuer, request: JobRequest
) -> IngestResult:
    """Create the job in the database, commit, then queue one split task per document."""
    ingested = create_job_from_folder(settings, db, request)
    queue_job(db, enqueuer, ingested.job_id)
    return ingested


def queue_job(db: Database, enqueuer: Enqueuer, job_id: str) -> None:
    """Mark an ingested (committed) job running and queue one split task per open document."""
    with db.session() as session:
        repo.set_job_status(session, job_id, JobStatus.RUNNING)
        options = session.scalar(select(Job.options).where(Job.id == job_id))
        documents = list(
            session.scalars(
                select(Document.id).where(
                    Document.job_id == job_id, Document.status == DocumentStatus.RUNNING
                )
            )
        )
    if documents:
        enqueuer.split_documents(documents, job_priority(options))
    else:
        enqueuer.finalize_job(job_id)


def split_document(db: Database, enqueuer: Enqueuer, document_id: int) -> int:
    """Queue a page task for each of the document's pages not yet terminal."""
    with db.session() as session:
        job = session.execute(
            select(Job.plan_name, Job.options).join(Document).where(Document.id == document_id)
        ).first()
        pages = list(
            session.scalars(
                select(Page.id)
                .where(Page.document_id == document_id)
                .where(Page.status.not_in(TERMINAL_PAGE_STATUSES))
                .order_by(Page.number)
            )
        )
    if job is None:
        log.warning("document %s is gone; nothing to split", document_id)
        return 0
    return enqueuer.process_pages(pages, job.plan_name, job_priority(job.options))


def run_queued_page(processor: PageProcessor, page_id: int) -> PageStatus:
    """Process one page for a task. PageBusy and database outages propagate for a retry;
    any other error is recorded on the page, which ends failed."""
    try:
        return processor.process(page_id)
    except (PageBusy, *DATABASE_DOWN):
        raise
    except Exception as exc:
        log.exception("page %s failed unexpectedly", page_id)
        return record_crash(processor.db, page_id, exc)


def job_left_open(db: Database, page_id: int) -> str | None:
    """The page's job id when the job has no page left open (time to finalize), else None."""
    with db.session() as session:
        job_id = session.scalar(select(Page.job_id).where(Page.id == page_id))
        if job_id is None or repo.open_pages(session, job_id):
            return None
        return job_id


def finalize_job(db: Database, job_id: str) -> bool:
    """Settle the job's documents and the job; idempotent."""
    return settle_job(db, job_id)


def recover(db: Database, enqueuer: Enqueuer, job_id: str | None = None) -> dict[str, int]:
    """Queue again every page left open (e.g. the broker lost its queue); pages per job."""
    with db.session() as session:
        query = select(Job.id, Job.plan_name, Job.options)
        query = query.where(Job.status != JobStatus.DONE if job_id is None else Job.id == job_id)
        jobs = list(session.execute(query))
        if job_id is not None and not jobs:
            raise KeyError(f"no job {job_id!r}")
        open_by_job = {
            jid: (plan, job_priority(options), repo.open_pages(session, jid))
            for jid, plan, options in jobs
        }
    queued: dict[str, int] = {}
    for jid, (plan, priority, pages) in open_by_job.items():
        queued[jid] = enqueuer.process_pages(pages, plan, priority) if pages else 0
        if not pages:
            enqueuer.finalize_job(jid)
    return queued


def job_progress(db: Database, job_id: str) -> JobProgress:
    with db.session() as session:
        status = session.scalar(select(Job.status).where(Job.id == job_id))
        if status is None:
            raise KeyError(f"no job {job_id!r}")
        return JobProgress(job_id, status, repo.count_pages_by_status(session, job_id))
