"""Lease heartbeats: while a page's engines run, its worker keeps pushing its lease back.

One thread per process renews every page the process holds with one UPDATE per beat, so a
page may run far longer than `page_lease_s`, and a dead worker's pages are free one lease
after its last beat.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from app.db import page_path
from app.db.engine import DATABASE_ERROR, Database
from app.pipeline.periodic import PeriodicThread
from app.settings import Settings

log = logging.getLogger(__name__)

BEATS_PER_LEASE = 3  # a beat may be late twice before the lease runs out


@dataclass(frozen=True)
class LeaseOptions:
    """A worker's hold on the pages it claims: who holds them and for how long."""

    owner: str  # the worker's id (`app.jobs.worker_id`), written on each page it holds
    lease_s: float  # `page_lease_s`: how long a page is held after its last renewal

    @classmethod
    def from_settings(cls, settings: Settings, owner: str) -> LeaseOptions:
        return cls(owner, settings.page_lease_s)

    @property
    def beat_s(self) -> float:
        """Seconds between two renewals."""
        return self.lease_s / BEATS_PER_LEASE


class LeaseKeeper:
    """The pages this process holds, renewed every `lease_s / 3` while any is held."""

    def __init__(self, db: Database, options: LeaseOptions) -> None:
        self.db = db
        self.options = options
        self._held: set[int] = set()
        self._lock = threading.Lock()
        self._beats = PeriodicThread(self._beat, options.beat_s, "folio-lease-heartbeat")

    def hold(self, page_id: int) -> bool:
        """Note the page as held; False when this process holds it already (a duplicate task)."""
        with self._lock:
            if page_id in self._held:
                return False
            self._held.add(page_id)
        self._beats.ensure_started()
        return True

    def release(self, page_id: int) -> None:
        with self._lock:
            self._held.discard(page_id)

    def held(self) -> list[int]:
        with self._lock:
            return sorted(self._held)

    def renew(self) -> int:
        """One beat: renew every held page's lease now; pages renewed."""
        pages = self.held()
        if not pages:
            return 0
        with self.db.autocommit() as conn:
            return page_path.renew_leases(conn, self.options.owner, pages, self.options.lease_s)

    def close(self) -> None:
        self._beats.stop()

    def _beat(self) -> None:
        try:
            self.renew()
        except DATABASE_ERROR as exc:
            # The database is away: the next beat tries again; the lease may lapse meanwhile.
            log.warning("lease heartbeat failed: %s", exc)
