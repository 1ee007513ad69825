"""Where the API's jobs run: a narrow seam, local threads today, Celery when a broker is set."""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from app.db import repo
from app.db.engine import Database
from app.domain import PageStatus
from app.jobs import run_job_locally, settle_job
from app.metrics import FolioMetrics
from app.settings import Settings

log = logging.getLogger(__name__)


class JobRunner(Protocol):
    """Runs ingested jobs somewhere. Cancelling has already closed the job's pages in the DB."""

    def submit(self, job_id: str) -> None: ...

    def cancel(self, job_id: str) -> None: ...

    def close(self) -> None: ...


class LocalJobRunner:
    """Jobs on a bounded thread pool in this process, through the same pipeline as `folio run`."""

    def __init__(
        self, settings: Settings, db: Database, metrics: FolioMetrics | None = None
    ) -> None:
        self.settings = settings
        self.db = db
        self.metrics = metrics
        self._pool = ThreadPoolExecutor(settings.api_concurrent_jobs, "folio-job")
        self._futures: dict[str, Future[None]] = {}

    def submit(self, job_id: str) -> None:
        self._futures[job_id] = self._pool.submit(self._run, job_id)

    def cancel(self, job_id: str) -> None:
        # A queued job never starts; a running one finds its pages closed and stops claiming.
        future = self._futures.pop(job_id, None)
        if future is not None:
            future.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        """Block until the job's run ends (tests and `folio watch`)."""
        future = self._futures.get(job_id)
        if future is not None:
            future.result(timeout)

    def _run(self, job_id: str) -> None:
        # The runner's edge: a job that cannot run records why on its open pages.
        try:
            with self.db.session() as session:
                page_ids = repo.open_pages(session, job_id)
            run_job_locally(self.settings, self.db, job_id, page_ids, metrics=self.metrics)
        except Exception as exc:
            log.exception("job %s failed to run", job_id)
            close_open_pages(self.db, job_id, "internal", f"{type(exc).__name__}: {exc}")
        finally:
            self._futures.pop(job_id, None)


def close_open_pages(db: Database, job_id: str, category: str, reason: str) -> None:
    """Fail every page of the job that is not terminal yet, then settle the job."""
    with db.session() as session:
        for page_id in repo.open_pages(session, job_id):
            repo.finish_page(
                session, page_id, PageStatus.FAILED, failure_category=category, error=reason
            )
    settle_job(db, job_id)


class CeleryJobRunner:
    """Jobs queued for `folio worker`s through the broker; the database holds their state."""

    def __init__(self, settings: Settings, db: Database) -> None:
        from app.queue import Enqueuer  # Celery is only imported where a broker is configured

        self.db = db
        self.enqueuer = Enqueuer(settings)

    def submit(self, job_id: str) -> None:
        from app.distributed import queue_job

        queue_job(self.db, self.enqueuer, job_id)

    def cancel(self, job_id: str) -> None:
        # The job's pages are closed in the database: their queued tasks find them terminal.
        pass

    def close(self) -> None:
        pass


def make_runner(settings: Settings, db: Database, metrics: FolioMetrics | None = None) -> JobRunner:
    """Celery workers when `broker_url` is set, else threads in this process."""
    if settings.broker_url:
        return CeleryJobRunner(settings, db)
    return LocalJobRunner(settings, db, metrics)
