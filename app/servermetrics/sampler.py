"""Taking a worker's server readings for a job: the first before its first page on an
endpoint, the latest after each page (and once more when a local job ends).

One sampler per worker process, shared by its page threads. Readings go to `server_samples`
keyed by (job, endpoint, worker), so workers of one job never overwrite each other; the report
merges the windows of readings that came from the same server instance.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping

from app.db import server_samples
from app.db.engine import Database
from app.servermetrics.counters import ServerCounters, ServerMetricsUnavailable, read_counters
from app.settings import Settings, metrics_url_of

Reader = Callable[[str], ServerCounters]


class ServerSampler:
    """Reads `urls` (endpoint name -> metrics URL) around pages and records the readings."""

    def __init__(
        self, db: Database, urls: Mapping[str, str], worker: str, read: Reader = read_counters
    ) -> None:
        self.db = db
        self.urls = dict(urls)
        self.worker = worker
        self.read = read
        self._lock = threading.Lock()  # held while a start reading is taken
        self._state = threading.Lock()  # guards the sets below, never held during a reading
        self._tried: set[tuple[str, str]] = set()  # (job, endpoint) with a start reading tried
        self._live: set[tuple[str, str]] = set()  # ... whose start reading succeeded
        self._reading: set[tuple[str, str]] = set()  # ... with an end reading under way
        self._again: set[tuple[str, str]] = set()  # ... with a page ended during that reading

    def before_page(self, job_id: str, endpoints: Iterable[str]) -> None:
        """The start reading, once per job and endpoint; other page threads wait for it, so
        no attempt of this worker runs before the baseline."""
        with self._lock:
            for name in self._known(endpoints):
                if (job_id, name) not in self._tried:
                    self._tried.add((job_id, name))
                    if self._record(job_id, name, "start"):
                        with self._state:
                            self._live.add((job_id, name))

    def after_page(self, job_id: str, endpoints: Iterable[str]) -> None:
        """The latest reading (replacing the previous one) for endpoints with a baseline.

        Page threads do not queue up behind a slow /metrics: while one reads, the others
        only ask for one more reading, which that thread takes once it is done, so there is
        always a reading after every page's end."""
        for name in self._known(endpoints):
            key = (job_id, name)
            with self._state:
                if key not in self._live:
                    continue
                if key in self._reading:
                    self._again.add(key)
                    continue
                self._reading.add(key)
            try:
                self._read_until_settled(key)
            finally:
                with self._state:
                    self._reading.discard(key)

    def _read_until_settled(self, key: tuple[str, str]) -> None:
        while True:
            self._record(*key, "end")
            with self._state:
                if key not in self._again:
                    return
                self._again.discard(key)

    def finish(self, job_id: str) -> None:
        """A last reading of every endpoint of the job, once this worker is done with it."""
        self.after_page(job_id, self.urls)
        with self._lock, self._state:
            self._tried = {key for key in self._tried if key[0] != job_id}
            self._live = {key for key in self._live if key[0] != job_id}

    def _known(self, endpoints: Iterable[str]) -> list[str]:
        return sorted({name for name in endpoints if name in self.urls})

    def _record(self, job_id: str, name: str, phase: str) -> bool:
        url = self.urls[name]
        try:
            counters, error = self.read(url), None
        except ServerMetricsUnavailable as exc:
            counters, error = None, str(exc)
        if counters is None and phase == "end":
            return False  # keep the previous end reading
        with self.db.session() as session:
            server_samples.record_server_sample(
                session, job_id, name, url, self.worker, phase, counters, error
            )
        return counters is not None


def sampler_from_settings(settings: Settings, db: Database, worker: str) -> ServerSampler | None:
    """A sampler for every VLM endpoint with metrics, or None when none has."""
    urls = {
        name: url
        for name, endpoint in settings.vlm_endpoints.items()
        if (url := metrics_url_of(endpoint)) is not None
    }
    return ServerSampler(db, urls, worker) if urls else None
