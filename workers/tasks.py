"""Thin tasks keyed by ids; the work is in `app.distributed` and `PageProcessor`.

Delivery is at-least-once (acks late), so every task is idempotent: a terminal page is left
alone, a page another worker holds is retried after its lease, and an answer already recorded
is not computed again.
"""

from __future__ import annotations

import logging
import random
from functools import partial
from typing import Any

from celery import Celery, Task

from app import distributed
from app.distributed.queue import FINALIZE_JOB, PROCESS_PAGE, PROCESS_PAGES, SPLIT_DOCUMENT
from app.errors import StoreUnavailable
from app.jobs import publish_job
from app.pipeline.process_page import PageBusy, PageOutcome
from workers.runtime import RuntimeHolder, WorkerRuntime

log = logging.getLogger(__name__)


def db_retry_delay(retries: int, max_delay_s: float) -> float:
    """Exponential backoff with jitter, capped: 0.5 s, 1 s, 2 s ... max_delay_s."""
    return min(max_delay_s, 0.5 * 2**retries) * random.uniform(0.8, 1.2)


def _retry_database_down(
    task: Task, holder: RuntimeHolder, exc: Exception, args: list[Any] | None = None
) -> None:
    """Retry the task later, with backoff: the database or the object store is down."""
    settings = holder.settings
    delay = db_retry_delay(task.request.retries, settings.db_retry_max_delay_s)
    log.warning("%s unreachable (%s); %s retries in %.1f s", _what(exc), exc, task.name, delay)
    raise task.retry(args=args, exc=exc, countdown=delay, max_retries=settings.db_retry_limit)


def _what(exc: Exception) -> str:
    return "object store" if isinstance(exc, StoreUnavailable) else "database"


def register_tasks(app: Celery, holder: RuntimeHolder) -> None:
    """Register Folio's three tasks on `app`, all sharing the process's runtime."""

    @app.task(bind=True, name=SPLIT_DOCUMENT, max_retries=None)
    def split_document(self: Task, document_id: int) -> int:
        try:
            runtime = holder.get()
            return distributed.split_document(runtime.db, runtime.enqueuer, document_id)
        except distributed.DATABASE_DOWN as exc:
            _retry_database_down(self, holder, exc)
            raise  # unreachable: retry raises

    @app.task(bind=True, name=PROCESS_PAGE, max_retries=None)
    def process_page(self: Task, page_id: int) -> str:
        try:
            runtime = holder.get()
            outcome = distributed.run_queued_page(runtime.processor, page_id)
        except PageBusy as exc:
            # Another worker holds the page; its lease ends at the latest in page_lease_s.
            delay = min(holder.settings.page_lease_s, 30.0)
            raise self.retry(exc=exc, countdown=delay, max_retries=None) from exc
        except (StoreUnavailable, *distributed.DATABASE_DOWN) as exc:
            _retry_database_down(self, holder, exc)  # the page was handed back, still open
            raise
        _settle([outcome], runtime)
        return outcome.status.value

    @app.task(bind=True, name=PROCESS_PAGES, max_retries=None)
    def process_pages(self: Task, page_ids: list[int]) -> dict[str, str]:
        try:
            runtime = holder.get()
            batch = distributed.run_queued_pages(runtime.processor, page_ids)
        except distributed.DATABASE_DOWN as exc:
            _retry_database_down(self, holder, exc)
            raise
        _settle(list(batch.outcomes.values()), runtime)
        if batch.deferred:
            # The store is down: these pages were handed back, open, untouched; their retry
            # backs off as for a database outage (other workers may take them meanwhile).
            down = StoreUnavailable(f"pages {batch.deferred} wait for the object store")
            _retry_database_down(self, holder, down, args=[batch.deferred + batch.busy])
        if batch.busy:
            # Other workers hold these; their leases end at the latest in page_lease_s.
            delay = min(holder.settings.page_lease_s, 30.0)
            busy = PageBusy(f"pages {batch.busy} are held by other workers")
            raise self.retry(args=[batch.busy], exc=busy, countdown=delay, max_retries=None)
        return {str(page_id): o.status.value for page_id, o in batch.outcomes.items()}

    def _settle(outcomes: list[PageOutcome], runtime: WorkerRuntime) -> None:
        """Finalize the jobs whose last open page one of `outcomes` closed; note the others."""
        finalize = {job for o in outcomes if (job := distributed.job_to_finalize(o))}
        for job_id in sorted(finalize):
            runtime.enqueuer.finalize_job(job_id)
        for outcome in outcomes:
            if outcome.closed and outcome.job_id is not None and outcome.job_id not in finalize:
                runtime.sweeper.note(outcome.job_id)

    @app.task(bind=True, name=FINALIZE_JOB, max_retries=None)
    def finalize_job(self: Task, job_id: str) -> bool:
        try:
            runtime = holder.get()
            publish = partial(publish_job, runtime.settings, runtime.db, finishing=True)
            done = distributed.finalize_job(runtime.db, job_id, publish)
        except (StoreUnavailable, *distributed.DATABASE_DOWN) as exc:
            _retry_database_down(self, holder, exc)
            raise
        if done and runtime.job_tokens is not None:
            runtime.job_tokens.count(job_id)
        return done
