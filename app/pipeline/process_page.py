"""Processing one page: the single implementation behind the local executor and Celery tasks.

`PageProcessor` holds the page's hold (its lease) and puts the parts together: the
transactions (`page_transactions.py`), the page read for its engines (`page_render.py`) and
the walk through its retry plan (`plan_walk.py`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from app.db.engine import DATABASE_DOWN, Database
from app.db.page_path import ClaimedPage, PageClose, Refusal
from app.domain import PageStatus
from app.engines.registry import EngineSet
from app.errors import FolioError, ObjectRefused, RenderError, StoreUnavailable
from app.pipeline.cancel import CancelWatch
from app.pipeline.leases import LeaseKeeper, LeaseOptions
from app.pipeline.page_attempts import UnitCount, copies_in_page, copies_unknown
from app.pipeline.page_render import PageRenderer
from app.pipeline.page_stop import PageStop
from app.pipeline.page_transactions import Closing, PageOutcome, PageTransactions
from app.pipeline.plan_walk import PlanWalker
from app.report.metrics import FolioMetrics
from app.retry.plan import PastAttempt
from app.servermetrics.sampler import ServerSampler
from app.settings import Settings
from app.storage import DocumentCache
from app.storage.options import StorageOptions

log = logging.getLogger(__name__)

__all__ = ["BatchOutcome", "CrashHandler", "PageBusy", "PageOutcome", "PageProcessor"]


class PageBusy(FolioError):
    """Another live worker holds the page; try again after its lease."""

    category = "busy"


# Ends a page whose processing raised: (page id, job id, error) -> its outcome.
CrashHandler = Callable[[int, str, Exception], PageOutcome]


@dataclass(frozen=True)
class BatchOutcome:
    """`run_many`'s result: each page's outcome, the pages another worker holds, and the
    pages handed back untouched because their document's store is down."""

    outcomes: dict[int, PageOutcome]
    busy: list[int]
    deferred: list[int] = field(default_factory=list)


class PageProcessor:
    """Renders a page, walks its attempt plan, and records every step in the database.

    A page costs two transactions when its first attempt is accepted, and `run_many` shares
    them among several pages (`page_transactions.py`).
    """

    def __init__(
        self,
        settings: Settings,
        db: Database,
        engines: EngineSet,
        owner: str,
        metrics: FolioMetrics | None = None,
        sampler: ServerSampler | None = None,
        cancels: CancelWatch | None = None,
        documents: DocumentCache | None = None,
        page_holds: UnitCount | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.engines = engines
        self.owner = owner
        self.sampler = sampler
        lease = LeaseOptions.from_settings(settings, owner)
        self.leases = LeaseKeeper(db, lease)
        self.transactions = PageTransactions(db, lease, metrics)
        # Where pages' documents are read: local paths as they are, stored ones via a copy.
        self.renderer = PageRenderer(
            settings, documents or DocumentCache.of(StorageOptions.of(settings))
        )
        grounded = copies_in_page if settings.detector_grounding else copies_unknown
        record = self.transactions.record_attempt
        self.walker = PlanWalker(settings, engines, record, page_holds or grounded, metrics)
        self._own_cancels = cancels is None
        self.cancels = cancels or CancelWatch(db, settings.cancel_check_s)

    def process(self, page_id: int) -> PageStatus:
        """Bring the page to a terminal status; a page already terminal is left as it is."""
        return self.run(page_id).status

    def run(self, page_id: int) -> PageOutcome:
        """`process`, telling also whether this call closed the page (the job may be done)."""
        if not self.leases.hold(page_id):
            raise PageBusy(f"page {page_id} is being processed in this process already")
        try:
            claimed = self.transactions.claim(page_id)
            if isinstance(claimed, Refusal):
                if claimed.status.terminal:
                    return PageOutcome(claimed.status)
                raise PageBusy(f"page {page_id} is held by {claimed.lease_owner}")
            try:
                closing = self._work(claimed)
            except StoreUnavailable:
                self.transactions.release([page_id])  # untouched: the retry starts it afresh
                raise
            return self.transactions.write([closing])[page_id]
        finally:
            self.leases.release(page_id)

    def run_many(self, page_ids: list[int], crashed: CrashHandler) -> BatchOutcome:
        """`run` for several pages, one after another, with one claim statement and one
        closing transaction for them all. A page another worker (or thread) holds is in
        `busy`; a page whose processing raises is handed to `crashed`, which must end it; a
        page id with no row is skipped. Database outages propagate: nothing is closed then,
        and the pages, still leased to this owner, are taken again by the retry."""
        asked = list(dict.fromkeys(page_ids))
        mine = [p for p in asked if self.leases.hold(p)]
        busy = [p for p in asked if p not in mine]
        try:
            claimed, outcomes = self._sort_claims(self.transactions.claim_many(mine), mine, busy)
            closings, crashes, deferred = self._work_batch(claimed, crashed)
            outcomes.update(crashes)
            outcomes.update(self.transactions.write(closings))
            self.transactions.release(deferred)
        finally:
            for page_id in mine:
                self.leases.release(page_id)
        return BatchOutcome(outcomes, busy, deferred)

    @staticmethod
    def _sort_claims(
        claims: dict[int, ClaimedPage | Refusal], mine: list[int], busy: list[int]
    ) -> tuple[list[ClaimedPage], dict[int, PageOutcome]]:
        """The pages claimed, in the order asked, and the outcomes of those already
        terminal; a page someone else holds joins `busy`, a page with no row is skipped."""
        claimed: list[ClaimedPage] = []
        outcomes: dict[int, PageOutcome] = {}
        for page_id in mine:
            claim = claims.get(page_id)
            if claim is None:
                log.warning("page %s is gone; skipped", page_id)
            elif isinstance(claim, ClaimedPage):
                claimed.append(claim)
            elif claim.status.terminal:
                outcomes[page_id] = PageOutcome(claim.status)
            else:
                busy.append(page_id)
        return claimed, outcomes

    def _work_batch(
        self, claimed: list[ClaimedPage], crashed: CrashHandler
    ) -> tuple[list[Closing], dict[int, PageOutcome], list[int]]:
        """Each claimed page worked up to its closing, or ended by `crashed` where it raised,
        or deferred: from the first page whose object store is down, the rest wait too, not
        each for its own retries."""
        closings: list[Closing] = []
        crashes: dict[int, PageOutcome] = {}
        deferred: list[int] = []
        for page in claimed:
            page_id = page.work.page_id
            if deferred:
                deferred.append(page_id)
                continue
            try:
                closings.append(self._work(page))
            except DATABASE_DOWN:
                raise
            except StoreUnavailable as exc:
                log.warning("page %s waits for the object store: %s", page_id, exc)
                deferred.append(page_id)
            except Exception as exc:
                log.exception("page %s failed unexpectedly", page_id)
                crashes[page_id] = crashed(page_id, page.work.job_id, exc)
        return closings, crashes, deferred

    def close(self) -> None:
        """Stop the lease heartbeat (the engines belong to the caller)."""
        self.leases.close()
        if self._own_cancels:
            self.cancels.close()

    def _work(self, claimed: ClaimedPage) -> Closing:
        """Process a claimed page up to its terminal outcome, which is returned, not written."""
        work = claimed.work
        started = time.monotonic()  # the page's time budget counts from here
        past: list[PastAttempt] = []
        if claimed.attempts:  # a redelivered page: its earlier attempts count
            past, answered = self.transactions.history(work, self.settings.plan(work.plan_name))
            if answered is not None:
                return answered
        try:
            rendered = self.renderer.render(work)
        except RenderError as exc:
            failed = PageClose(PageStatus.FAILED, failure_category=exc.category, error=str(exc))
            return Closing(work, failed)
        except ObjectRefused as exc:  # missing, denied, changed since it was listed, too big
            failed = PageClose(PageStatus.FAILED, failure_category=exc.category, error=exc.reason)
            return Closing(work, failed)
        endpoints = {s.endpoint for s in self.settings.plan(work.plan_name) if s.endpoint}
        if self.sampler:
            self.sampler.before_page(work.job_id, endpoints)
        budget = self.settings.page_time_budget_s
        stop = PageStop(self.cancels.watch(work.job_id), budget, started=started)
        page = replace(rendered.page, should_stop=stop)
        try:
            return self.walker.walk(work, page, rendered.facts, past, rendered.judge)
        finally:
            self.cancels.unwatch(work.job_id)
            if self.sampler:
                self.sampler.after_page(work.job_id, endpoints)
