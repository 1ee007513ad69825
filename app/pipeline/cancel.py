"""Which jobs were cancelled, for the pages this process runs: the check their VLM streams
consult at each chunk, so a cancel stops the requests in flight the way a loop does.

This process's runner tells it at once (`cancel`); a cancel made anywhere else (the API in
another process, for Celery workers on other machines) is read from the database every
`interval_s`, for the jobs this process has pages of in flight only.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable

from app.db import running_jobs
from app.db.engine import DATABASE_DOWN, Database
from app.pipeline.periodic import PeriodicThread

log = logging.getLogger(__name__)


class CancelWatch:
    def __init__(self, db: Database, interval_s: float) -> None:
        self.db = db
        self._watched: Counter[str] = Counter()
        self._cancelled: set[str] = set()
        self._lock = threading.Lock()
        self._checks = PeriodicThread(self._check_logged, interval_s, "folio-cancel")

    def watch(self, job_id: str) -> Callable[[], bool]:
        """Start watching the job (until `unwatch`); the check says whether it was cancelled."""
        with self._lock:
            self._watched[job_id] += 1
        self._checks.ensure_started()
        cancelled = self._cancelled
        return lambda: job_id in cancelled

    def unwatch(self, job_id: str) -> None:
        with self._lock:
            self._watched[job_id] -= 1
            if self._watched[job_id] <= 0:
                del self._watched[job_id]
                self._cancelled.discard(job_id)

    def cancel(self, job_id: str) -> None:
        """This process cancelled the job: its checks say so from now on."""
        with self._lock:
            if job_id in self._watched:
                self._cancelled.add(job_id)

    def check(self) -> set[str]:
        """Read which watched jobs are cancelled in the database; those found."""
        with self._lock:
            watched = list(self._watched)
        if not watched:
            return set()
        with self.db.session() as session:
            found = running_jobs.cancelled_jobs(session, watched)
        with self._lock:
            self._cancelled |= found & set(self._watched)
        return found

    def close(self) -> None:
        self._checks.stop()

    def _check_logged(self) -> None:
        try:
            self.check()
        except DATABASE_DOWN as exc:
            log.warning("cancel check failed, will retry: %s", exc)
