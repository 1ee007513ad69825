"""Where the API's jobs run: a narrow seam, local threads today, Celery when a broker is set."""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
from functools import partial
from typing import Protocol

from app.db import jobs, pages
from app.db.engine import Database
from app.jobs import (
    close_open_pages,
    deliver_job,
    interrupted_api_jobs,
    job_priority,
    release_dead_leases,
    run_job_locally,
)
from app.jobs.delivery import DeliveryFailed, requeue_undelivered
from app.pipeline.cancel import CancelWatch
from app.report.metrics import FolioMetrics
from app.settings import Settings

log = logging.getLogger(__name__)


class JobRunner(Protocol):
    """Runs ingested jobs somewhere. Cancelling has already closed the job's pages in the DB."""

    def submit(self, job_id: str) -> None: ...

    def cancel(self, job_id: str) -> None: ...

    def close(self) -> None: ...


class LocalJobRunner:
    """Jobs on `api_concurrent_jobs` threads in this process, through `folio run`'s pipeline.

    Waiting jobs start by their `priority` option, highest first, then in submission order.
    """

    def __init__(
        self,
        settings: Settings,
        db: Database,
        metrics: FolioMetrics | None = None,
        *,
        start: bool = True,
    ) -> None:
        self.settings = settings
        self.db = db
        self.metrics = metrics
        self._waiting: list[tuple[int, int, str]] = []  # heap of (-priority, order, job id)
        self._order = itertools.count()
        self._done: dict[str, threading.Event] = {}
        self._cancelled: set[str] = set()
        self._closed = False
        self._changed = threading.Condition()
        self._threads: list[threading.Thread] = []
        self.cancels = CancelWatch(db, settings.cancel_check_s)
        if start:
            self.start()

    def start(self) -> None:
        """Start the job threads (a runner made with start=False holds jobs until then)."""
        for i in range(self.settings.api_concurrent_jobs - len(self._threads)):
            thread = threading.Thread(target=self._work, name=f"folio-job-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def submit(self, job_id: str) -> None:
        with self.db.session() as session:
            priority = job_priority(jobs.job_options(session, job_id))
        with self._changed:
            self._done[job_id] = threading.Event()
            self._cancelled.discard(job_id)
            heapq.heappush(self._waiting, (-priority, next(self._order), job_id))
            self._changed.notify()

    def resume(self) -> list[str]:
        """Take up again the API jobs a previous server left queued or running (their open
        pages only; pages its killed process held are freed at once), or whose results it
        could not send (sent again)."""
        job_ids = interrupted_api_jobs(self.db)
        for job_id in job_ids:
            release_dead_leases(self.db, job_id)
            requeue_undelivered(self.db, job_id)  # `pending` again until it runs
            self.submit(job_id)
        if job_ids:
            log.warning("resuming %d job(s) left unfinished by a previous server", len(job_ids))
        return job_ids

    def cancel(self, job_id: str) -> None:
        # A waiting job never starts; a running one finds its pages closed and stops claiming.
        with self._changed:
            if job_id in self._done:
                self._cancelled.add(job_id)
        self.cancels.cancel(job_id)  # its streams in flight stop at their next chunk

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self.cancels.close()

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        """Block until the job's run ends (tests and `folio watch`)."""
        done = self._done.get(job_id)
        if done is not None and not done.wait(timeout):
            raise TimeoutError(f"job {job_id} still running after {timeout} s")

    def _work(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and not self._closed:
                    self._changed.wait()
                if self._closed:
                    return
                job_id = heapq.heappop(self._waiting)[2]
                skip = job_id in self._cancelled
            if not skip:
                self._run(job_id)
            with self._changed:
                self._cancelled.discard(job_id)
                self._done.pop(job_id).set()  # a job the runner no longer holds is not waited on

    def _run(self, job_id: str) -> None:
        # The runner's edge: a job that cannot run records why on its open pages.
        # Its results_uri or result_urls get the results before the job reads done.
        deliver = partial(deliver_job, self.settings, self.db)
        try:
            with self.db.session() as session:
                page_ids = pages.open_pages(session, job_id)
            run_job_locally(
                self.settings,
                self.db,
                job_id,
                page_ids,
                metrics=self.metrics,
                cancels=self.cancels,
                on_done=deliver,
            )
        except DeliveryFailed:
            return  # the job reads `undelivered`, with why; the next start tries again
        except Exception as exc:
            log.exception("job %s failed to run", job_id)
            reason = f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(DeliveryFailed):
                close_open_pages(self.db, job_id, "internal", reason, on_done=deliver)


class CeleryJobRunner:
    """Jobs queued for `folio worker`s through the broker; the database holds their state."""

    def __init__(self, settings: Settings, db: Database) -> None:
        from app.distributed.queue import (
            Enqueuer,  # Celery is only imported where a broker is configured
        )

        self.db = db
        self.enqueuer = Enqueuer(settings)

    def submit(self, job_id: str) -> None:
        from app.distributed import queue_job

        queue_job(self.db, self.enqueuer, job_id)

    def cancel(self, job_id: str) -> None:
        # The job's pages are closed in the database: their queued tasks find them terminal,
        # and the workers' cancel checks (every cancel_check_s) stop the pages in flight.
        pass

    def close(self) -> None:
        pass


def make_runner(settings: Settings, db: Database, metrics: FolioMetrics | None = None) -> JobRunner:
    """Celery workers when `broker_url` is set, else threads in this process, which first
    resume the jobs a stopped server left unfinished."""
    if settings.broker_url:
        return CeleryJobRunner(settings, db)
    runner = LocalJobRunner(settings, db, metrics)
    runner.resume()
    return runner
