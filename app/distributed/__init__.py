"""Distributed mode's facade: submit a job to the queue, run one queued page, recover, settle.
Its parts: the Celery client and messages (`queue.py`), a read-only look at Redis
(`queue_view.py`), lost tasks found and queued again (`lost_tasks.py`).

The Celery tasks in `workers/` and the CLI call these; the database holds every state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from app.db import attempts, jobs, running_jobs
from app.db.engine import DATABASE_DOWN, Database
from app.db.pages import count_pages_by_status
from app.distributed.queue import BrokerUnavailable, Enqueuer
from app.domain import TERMINAL_PAGE_STATUSES, Executor, JobStatus
from app.errors import ObjectRefused, StoreUnavailable
from app.jobs import JobRequest, create_job, job_priority, settle_job
from app.jobs.delivery import DeliveryFailed, mark_undelivered
from app.pipeline.ingest import IngestResult
from app.pipeline.local import record_crash
from app.pipeline.periodic import PeriodicThread
from app.pipeline.process_page import BatchOutcome, PageBusy, PageOutcome, PageProcessor
from app.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobProgress:
    job_id: str
    status: str
    pages: dict[str, int]
    loop_stops: dict[str, str] = field(default_factory=dict)  # endpoint -> stop relied on

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
    ingested = create_job(settings, db, request)
    queue_job(db, enqueuer, ingested.job_id)
    return ingested


def queue_job(db: Database, enqueuer: Enqueuer, job_id: str) -> None:
    """Mark an ingested (committed) job running and queue one split task per open document."""
    with db.session() as session:
        jobs.mark_job_running(session, job_id, Executor.CELERY)
        options, documents = running_jobs.open_documents(session, job_id)
    if documents:
        enqueuer.split_documents(documents, job_priority(options))
    else:
        enqueuer.finalize_job(job_id)


def split_document(db: Database, enqueuer: Enqueuer, document_id: int) -> int:
    """Queue a page task for each of the document's pages not yet terminal."""
    with db.session() as session:
        pages = running_jobs.open_pages_of_document(session, document_id)
    if pages is None:
        log.warning("document %s is gone; nothing to split", document_id)
        return 0
    return enqueuer.process_pages(pages.ids, pages.plan_name, job_priority(pages.options))


def run_queued_page(processor: PageProcessor, page_id: int) -> PageOutcome:
    """Process one page for a task. PageBusy, database and object store outages propagate for
    a retry; any other error is recorded on the page, which ends failed."""
    try:
        return processor.run(page_id)
    except (PageBusy, StoreUnavailable, *DATABASE_DOWN):
        raise
    except Exception as exc:
        log.exception("page %s failed unexpectedly", page_id)
        status = record_crash(processor.db, page_id, exc)
        with processor.db.session() as session:
            job_id = running_jobs.job_of_page(session, page_id)
        # It may have been the job's last open page: let the sweep look.
        return PageOutcome(status, job_id, closed=True, others_open=True)


def run_queued_pages(processor: PageProcessor, page_ids: list[int]) -> BatchOutcome:
    """`run_queued_page` for a task's group of pages: pages other workers hold come back in
    `busy` for a retry; a page that fails unexpectedly ends failed, the others go on."""

    def crashed(page_id: int, job_id: str, exc: Exception) -> PageOutcome:
        status = record_crash(processor.db, page_id, exc)
        return PageOutcome(status, job_id, closed=True, others_open=True)

    return processor.run_many(page_ids, crashed)


def job_to_finalize(outcome: PageOutcome) -> str | None:
    """The job id when this outcome closed the job's last open page: time to finalize."""
    if outcome.closed and not outcome.others_open:
        return outcome.job_id
    return None


class FinalizeSweeper:
    """Finalizes, in batches, the jobs whose pages closed while others still looked open.

    A page's close sees the other pages as its statement started, so when the last pages of a
    job close at the same moment each may see the others open and none finalizes. Every such
    close notes its job here; each sweep, after those closes committed, looks once at all noted
    jobs (one query) and finalizes those with no open page left. The later sweep of any two
    racing closes comes after both commits, so no job is left unfinalized, and a page costs no
    round trip for it.
    """

    def __init__(self, db: Database, enqueuer: Enqueuer, interval_s: float = 1.0) -> None:
        self.db = db
        self.enqueuer = enqueuer
        self._noted: set[str] = set()
        self._lock = threading.Lock()
        self._sweeps = PeriodicThread(self._sweep_logged, interval_s, "folio-finalize")

    def note(self, job_id: str) -> None:
        with self._lock:
            self._noted.add(job_id)
        self._sweeps.ensure_started()

    def sweep(self) -> list[str]:
        """Finalize the noted jobs that have no open page now; the job ids queued."""
        with self._lock:
            noted, self._noted = self._noted, set()
        if not noted:
            return []
        try:
            with self.db.autocommit() as conn:
                still_open = running_jobs.jobs_with_open_pages(conn, noted)
            done = sorted(noted - still_open)
            for job_id in done:
                self.enqueuer.finalize_job(job_id)
        except (*DATABASE_DOWN, BrokerUnavailable):
            with self._lock:
                self._noted |= noted  # the next sweep tries again
            raise
        return done

    def close(self) -> None:
        self._sweeps.stop()
        self._sweep_logged()  # a job left now is finalized by `folio recover`

    def _sweep_logged(self) -> None:
        try:
            self.sweep()
        except (*DATABASE_DOWN, BrokerUnavailable) as exc:
            log.warning("finalize sweep failed, will retry: %s", exc)


def finalize_job(db: Database, job_id: str, publish: Callable[[str], object] | None = None) -> bool:
    """Settle the job's documents and the job, `publish`ing its results just before it is
    marked done; idempotent (publishing again replaces the same files). A store that is down
    propagates (the task retries, the job stays running); a refusal (a missing results
    bucket, an expired PUT URL) leaves the job `undelivered`, with why (app/jobs/delivery.py)."""
    if publish is None:
        return settle_job(db, job_id)
    with db.session() as session:
        if jobs.job_status(session, job_id) == JobStatus.DONE:
            # A late or repeated finalize (a retry, the sweeper beside the last page's task):
            # the results went out as the job ended; sent again, they could overwrite a newer
            # job's in the same results prefix.
            return True

    def send(job: str) -> None:
        try:
            publish(job)
        except ObjectRefused as exc:  # retrying will not help: the job says so
            mark_undelivered(db, job, 1, exc)
            raise DeliveryFailed(str(exc)) from exc

    try:
        return settle_job(db, job_id, send)
    except DeliveryFailed:
        return False


def recover(db: Database, enqueuer: Enqueuer, job_id: str | None = None) -> dict[str, int]:
    """Queue again every page left open (e.g. the broker lost its queue); pages per job.

    Without `job_id`, jobs marked as run by the embedded executor are left alone: their
    `folio run` or `folio serve` holds or resumes them (`local_jobs_left` counts them); named,
    any job is taken, and Celery runs it from then on."""
    with db.session() as session:
        open_by_job = running_jobs.jobs_to_recover(session, job_id)
    queued: dict[str, int] = {}
    for jid, work in open_by_job.items():
        priority = job_priority(work.options)
        queued[jid] = enqueuer.process_pages(work.ids, work.plan_name, priority) if work.ids else 0
        if not work.ids:
            enqueuer.finalize_job(jid)
    return queued


def local_jobs_left(db: Database) -> int:
    """Open jobs that the embedded executor runs: `recover` without a job leaves them alone."""
    with db.session() as session:
        return running_jobs.count_local_jobs_open(session)


def job_progress(db: Database, job_id: str) -> JobProgress:
    with db.session() as session:
        status = jobs.job_status(session, job_id)
        if status is None:
            raise KeyError(f"no job {job_id!r}")
        return JobProgress(
            job_id,
            status,
            count_pages_by_status(session, job_id),
            attempts.loop_stops_by_endpoint(session, job_id),
        )
