"""The transactions one page's processing costs, and what they write.

A page whose first attempt is accepted costs two: the claim (one UPDATE that returns the
page's work) and the close (its attempt row and terminal status together). An attempt that a
later step follows is recorded on its own as soon as it ends. A batch of pages shares both:
one claim for all, one closing transaction for all.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.db import attempts, page_path
from app.db.engine import Database
from app.db.page_path import ClaimedPage, PageClose, PageWork, Refusal
from app.domain import EngineResult, PageStatus
from app.pipeline.leases import LeaseOptions
from app.pipeline.page_attempts import accepted_attempt, answer_close
from app.report.metrics import FolioMetrics
from app.retry.plan import PastAttempt
from app.settings import PlanStep

Attempt = tuple[int, PlanStep, EngineResult]


@dataclass(frozen=True)
class Closing:
    """A page's processing done, not yet written: its terminal outcome and last attempt."""

    work: PageWork
    outcome: PageClose
    attempt: Attempt | None = None
    # Verdicts (kind, onset) a kept confirming answer showed wrong on the page's attempts.
    false_alarms: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class PageOutcome:
    """How a page's processing ended: its status, and whether this call closed it."""

    status: PageStatus
    job_id: str | None = None
    closed: bool = False
    others_open: bool = True  # other pages of the job were open as this one closed


class PageTransactions:
    """Claims, records and closes pages on `db` as the lease's owner."""

    def __init__(
        self, db: Database, lease: LeaseOptions, metrics: FolioMetrics | None = None
    ) -> None:
        self.db = db
        self.lease = lease
        self.metrics = metrics

    def claim(self, page_id: int) -> ClaimedPage | Refusal:
        with self.db.autocommit() as conn:
            return page_path.claim(conn, page_id, self.lease.owner, self.lease.lease_s)

    def claim_many(self, page_ids: list[int]) -> dict[int, ClaimedPage | Refusal]:
        """The pages' claims in one statement; a page id with no row is left out."""
        with self.db.autocommit() as conn:
            return page_path.claim_many(conn, page_ids, self.lease.owner, self.lease.lease_s)

    def release(self, page_ids: list[int]) -> None:
        """Hand claimed pages back untouched (their document's store is down)."""
        if page_ids:
            with self.db.transaction() as conn:
                page_path.release(conn, page_ids, self.lease.owner)

    def history(
        self, work: PageWork, plan: list[PlanStep]
    ) -> tuple[list[PastAttempt], Closing | None]:
        """A redelivered page's earlier attempts, which count, and its close on the answer
        one of them gave already, if any (an answer is not redone)."""
        with self.db.session() as session:
            past = attempts.history(session, work.page_id)
            answer = accepted_attempt(plan, past)
            text = (
                attempts.attempt_output(session, work.page_id, answer.step_index)
                if answer
                else None
            )
        if answer is None:
            return past, None
        return past, Closing(work, answer_close(plan[answer.step_index], len(past), text or ""))

    def record_attempt(self, work: PageWork, attempt: Attempt) -> None:
        """An attempt that a later step follows, recorded as soon as it ends."""
        with self.db.transaction() as conn:
            page_path.record_attempt(conn, attempts.attempt_row(work, *attempt))

    def write(self, closings: list[Closing]) -> dict[int, PageOutcome]:
        """The pages' last attempts and terminal statuses, in one transaction."""
        if not closings:
            return {}
        closed: dict[int, page_path.Closed | None] = {}
        with self.db.transaction() as conn:
            rows = [attempts.attempt_row(c.work, *c.attempt) for c in closings if c.attempt]
            page_path.record_attempts(conn, rows)
            for closing in closings:
                if closing.false_alarms:
                    page_path.mark_false_alarms(conn, closing.work.page_id, closing.false_alarms)
                closed[closing.work.page_id] = page_path.close(
                    conn, closing.work.page_id, closing.outcome
                )
            # Closed meanwhile (cancelled): such a page keeps that outcome.
            kept = {p: page_path.page_status(conn, p) for p, c in closed.items() if c is None}
        outcomes: dict[int, PageOutcome] = {}
        for closing in closings:
            page_id, job_id = closing.work.page_id, closing.work.job_id
            done = closed[page_id]
            outcomes[page_id] = (
                PageOutcome(done.status, job_id, True, done.others_open)
                if done
                else PageOutcome(kept[page_id], job_id)
            )
            if self.metrics:
                self.metrics.observe_page(outcomes[page_id].status)
        return outcomes
