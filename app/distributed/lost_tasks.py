"""Tasks the broker lost with a killed worker, found and queued again.

A worker killed with SIGKILL can take a message that Redis has already handed it but that it
had not yet recorded as unacked (see `queue_view.py`): that page stays `pending` forever, since
`visibility_timeout` only restores unacked messages. Every `lost_task_check_s` one worker (a
Redis lead key) looks, when Folio's queues are drained, for open pages of running jobs that no
live worker leases and that no unacked task names. A page seen so on two checks in a row is
queued again. A duplicate task costs one refused claim (tasks are idempotent), so the second
sighting only keeps a message in flight on a live worker from being sent twice, not loss.

Jobs still `running` with no open page (their finalize task was lost) are finalized the same
way. While the queues are not drained nothing is done: a lost page then waits until they are.

Only jobs marked as run by Celery (`Job.options["executor"]`, set when a job is queued) are
looked at: a job the embedded executor runs (`folio run`, `folio serve` without a broker) on
the same database holds its open pages in its own process. Jobs started before the marker
existed are left alone too, since they may be local; `folio recover` takes those up.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from redis import RedisError

from app.db import running_jobs
from app.db.engine import DATABASE_ERROR, Database
from app.db.running_jobs import UnleasedPage
from app.distributed.queue import BrokerUnavailable, Enqueuer
from app.distributed.queue_view import QueueView
from app.jobs import job_priority
from app.pipeline.periodic import PeriodicThread

log = logging.getLogger(__name__)
MAX_PAGES_PER_CHECK = 10_000
SUSPECTS = "lost-task-suspects"


class LostTaskSweeper:
    """Queues again the pages (and finalizes the jobs) whose tasks the broker lost."""

    def __init__(
        self, db: Database, enqueuer: Enqueuer, view: QueueView, interval_s: float
    ) -> None:
        self.db = db
        self.enqueuer = enqueuer
        self.view = view
        self.interval_s = interval_s
        self._checks = PeriodicThread(self._check_logged, interval_s, "folio-lost-tasks")

    @property
    def _memory_s(self) -> float:
        """How long a sighting counts: a check or two may be late."""
        return self.interval_s * 3 + 10

    def start(self) -> None:
        self._checks.ensure_started()

    def check(self) -> list[int]:
        """One check, when this process leads this interval; the page ids queued again."""
        if not self.view.lead("lost-task-check", self.interval_s * 0.9):
            return []
        if self.view.queued():
            self.view.remember(SUSPECTS, set(), self._memory_s)
            return []
        with self.db.autocommit() as conn:
            pages = running_jobs.unleased_open_pages(conn, MAX_PAGES_PER_CHECK)
            idle_jobs = running_jobs.running_jobs_without_open_pages(conn)
        held = self.view.in_flight()
        lost = {
            p.page_id: p
            for p in pages
            if p.page_id not in held.pages and p.document_id not in held.documents
        }
        # Finalizing is idempotent and cheap: an idle job needs no second sighting.
        confirmed = self.view.remember(SUSPECTS, set(lost), self._memory_s) & set(lost)
        self._requeue([lost[p] for p in sorted(confirmed)])
        for job_id in idle_jobs:
            self.enqueuer.finalize_job(job_id)
        return sorted(confirmed)

    def close(self) -> None:
        self._checks.stop()
        self.view.close()

    def _requeue(self, pages: list[UnleasedPage]) -> None:
        by_job: dict[str, list[UnleasedPage]] = defaultdict(list)
        for page in pages:
            by_job[page.job_id].append(page)
        for job_id, lost in by_job.items():
            first = lost[0]
            ids = [p.page_id for p in lost]
            self.enqueuer.process_pages(ids, first.plan_name, job_priority(first.options))
            log.warning("queued again %d page(s) of job %s whose tasks were lost", len(ids), job_id)

    def _check_logged(self) -> None:
        try:
            self.check()
        except (DATABASE_ERROR, RedisError, BrokerUnavailable) as exc:
            log.warning("lost-task check failed; the next one tries again: %s", exc)
