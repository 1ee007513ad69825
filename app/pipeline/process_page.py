"""Processing one page: the single implementation behind the local executor and Celery tasks."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from app.db import attempts, page_path
from app.db.engine import DATABASE_DOWN, Database
from app.db.page_path import ClaimedPage, PageClose, PageWork, Refusal, RenderFacts
from app.domain import AttemptRole, AttemptStatus, EngineResult, PageInput, PageStatus
from app.engines.registry import EngineSet
from app.errors import EngineError, FolioError, ObjectRefused, RenderError, StoreUnavailable
from app.pdf.render import read_page
from app.pdf.textlayer import text_layer_is_usable
from app.pipeline.cancel import CancelWatch
from app.pipeline.leases import LeaseKeeper
from app.pipeline.page_attempts import (
    LayerJudge,
    UnitCount,
    accepted_attempt,
    answer_close,
    confirming_page,
    copies_in_page,
    copies_unknown,
    failure_of,
    judged_layer,
    page_input,
    past_attempt,
    resumed_page,
)
from app.pipeline.text_layer import judge_layer
from app.profiles.judge import ROTATED, rotation_after
from app.report.metrics import FolioMetrics
from app.retry.plan import Limits, PageFacts, PastAttempt, false_alarms, is_accepted, next_attempt
from app.servermetrics.sampler import ServerSampler
from app.settings import PlanStep, Settings
from app.storage import DocumentCache, StoredObject
from app.storage.options import StorageOptions
from app.textlayer import GateConfig
from app.textlayer.words import languages_for

log = logging.getLogger(__name__)


_CANCELLED = PageClose(
    PageStatus.FAILED, failure_category="cancelled", error="the job was cancelled"
)


class PageBusy(FolioError):
    """Another live worker holds the page; try again after its lease."""

    category = "busy"


Attempt = tuple[int, PlanStep, EngineResult]


@dataclass(frozen=True)
class Closing:
    """A page's processing done, not yet written: its terminal outcome and last attempt."""

    work: PageWork
    outcome: PageClose
    attempt: Attempt | None = None
    # Verdicts (kind, onset) a kept confirming answer showed wrong on the page's attempts.
    false_alarms: tuple[tuple[str, int], ...] = ()


# Ends a page whose processing raised: (page id, job id, error) -> its outcome.
CrashHandler = Callable[[int, str, Exception], "PageOutcome"]


@dataclass(frozen=True)
class BatchOutcome:
    """`run_many`'s result: each page's outcome, the pages another worker holds, and the
    pages handed back untouched because their document's store is down."""

    outcomes: dict[int, PageOutcome]
    busy: list[int]
    deferred: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class PageOutcome:
    """How a page's processing ended: its status, and whether this call closed it."""

    status: PageStatus
    job_id: str | None = None
    closed: bool = False
    others_open: bool = True  # other pages of the job were open as this one closed


class PageProcessor:
    """Renders a page, walks its attempt plan, and records every step in the database.

    A page whose first attempt is accepted costs two transactions: the claim (one UPDATE that
    returns the page's work) and the close (its attempt row and terminal status together). An
    attempt that a later step follows is recorded on its own as soon as it ends. `run_many`
    shares both among several pages: one claim for all, one closing transaction for all.
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
        # A confirming attempt's bound: what the page holds of its unit, where grounding asks.
        grounded = copies_in_page if settings.detector_grounding else copies_unknown
        self.page_holds = page_holds or grounded
        # Where pages' documents are read: local paths as they are, stored ones via a copy.
        self.documents = documents or DocumentCache.of(StorageOptions.of(settings))
        self.db = db
        self.engines = engines
        self.owner = owner
        self.metrics = metrics
        self.sampler = sampler
        self.lease_s = settings.page_lease_s
        self.leases = LeaseKeeper(db, owner, self.lease_s)
        self.gate = GateConfig(languages_for(settings.tesseract_lang))
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
            with self.db.autocommit() as conn:
                claimed = page_path.claim(conn, page_id, self.owner, self.lease_s)
            if isinstance(claimed, Refusal):
                if claimed.status.terminal:
                    return PageOutcome(claimed.status)
                raise PageBusy(f"page {page_id} is held by {claimed.lease_owner}")
            try:
                closing = self._work(claimed)
            except StoreUnavailable:
                self._release([page_id])  # untouched: the task's retry starts it afresh
                raise
            return self._write([closing])[page_id]
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
        outcomes: dict[int, PageOutcome] = {}
        try:
            with self.db.autocommit() as conn:
                claims = page_path.claim_many(conn, mine, self.owner, self.lease_s)
            closings: list[Closing] = []
            deferred: list[int] = []
            for page_id in mine:
                claimed = claims.get(page_id)
                if claimed is None:
                    log.warning("page %s is gone; skipped", page_id)
                elif isinstance(claimed, Refusal):
                    if claimed.status.terminal:
                        outcomes[page_id] = PageOutcome(claimed.status)
                    else:
                        busy.append(page_id)
                elif deferred:  # the store is down: the rest wait too, not each for its retries
                    deferred.append(page_id)
                else:
                    try:
                        closings.append(self._work(claimed))
                    except DATABASE_DOWN:
                        raise
                    except StoreUnavailable as exc:
                        log.warning("page %s waits for the object store: %s", page_id, exc)
                        deferred.append(page_id)
                    except Exception as exc:
                        log.exception("page %s failed unexpectedly", page_id)
                        outcomes[page_id] = crashed(page_id, claimed.work.job_id, exc)
            outcomes.update(self._write(closings))
            self._release(deferred)
        finally:
            for page_id in mine:
                self.leases.release(page_id)
        return BatchOutcome(outcomes, busy, deferred)

    def _release(self, page_ids: list[int]) -> None:
        if page_ids:
            with self.db.transaction() as conn:
                page_path.release(conn, page_ids, self.owner)

    def close(self) -> None:
        """Stop the lease heartbeat (the engines belong to the caller)."""
        self.leases.close()
        if self._own_cancels:
            self.cancels.close()

    def _work(self, claimed: ClaimedPage) -> Closing:
        """Process a claimed page up to its terminal outcome, which is returned, not written."""
        work = claimed.work
        past: list[PastAttempt] = []
        if claimed.attempts:
            # A redelivered page: its earlier attempts count, and an answer is not redone.
            with self.db.session() as session:
                past = attempts.history(session, work.page_id)
                answer = accepted_attempt(self.settings.plan(work.plan_name), past)
                text = (
                    attempts.attempt_output(session, work.page_id, answer.step_index)
                    if answer
                    else None
                )
            if answer is not None:
                step = self.settings.plan(work.plan_name)[answer.step_index]
                return Closing(work, answer_close(step, len(past), text or ""))
        try:
            page, facts, judge = self._render(work)
        except RenderError as exc:
            failed = PageClose(PageStatus.FAILED, failure_category="render", error=str(exc))
            return Closing(work, failed)
        except ObjectRefused as exc:  # missing, denied, changed since it was listed, too big
            failed = PageClose(PageStatus.FAILED, failure_category=exc.category, error=exc.reason)
            return Closing(work, failed)
        endpoints = {s.endpoint for s in self.settings.plan(work.plan_name) if s.endpoint}
        if self.sampler:
            self.sampler.before_page(work.job_id, endpoints)
        page = replace(page, should_stop=self.cancels.watch(work.job_id))
        try:
            return self._walk_plan(work, page, facts, past, judge)
        finally:
            self.cancels.unwatch(work.job_id)
            if self.sampler:
                self.sampler.after_page(work.job_id, endpoints)

    def _render(self, work: PageWork) -> tuple[PageInput, RenderFacts, LayerJudge | None]:
        """The page read (its text layer and sizes) and how to rasterise it when an engine
        asks: a model that renders the page at its own size, as every VLM profile does, gets
        the page rasterised once, not also at Folio's DPI. Where the page has a usable text
        layer, the gate's judgement of it, to take when a text-layer step runs (the layout and
        the table finder cost ~60 ms a page, which a page the VLM answers never needs)."""
        started = time.perf_counter()
        dpi = int(work.options.get("dpi") or self.settings.dpi)
        path = self._local_copy(work)
        max_side = self.settings.max_image_side
        outline = read_page(path, work.number, dpi, max_side)
        usable = text_layer_is_usable(outline.text_layer, self.settings.textlayer_min_chars)
        judge = None
        if usable:
            enforce = self.settings.textlayer_gate
            judge = partial(judge_layer, path, work.number, self.gate, enforce)
        facts = RenderFacts(outline.pixels, usable, time.perf_counter() - started)
        return page_input(path, work.number, dpi, max_side, outline, usable), facts, judge

    def _local_copy(self, work: PageWork) -> Path:
        """The page's document on this machine's disk (a stored one is fetched, once)."""
        stored = StoredObject(work.path, 0, work.etag)
        return self.documents.local_path(stored, work.sha256)

    def _walk_plan(
        self,
        work: PageWork,
        page: PageInput,
        facts: RenderFacts,
        past: list[PastAttempt],
        judge: LayerJudge | None = None,
    ) -> Closing:
        plan = self.settings.plan(work.plan_name)
        applies = PageFacts(page.text_layer_usable, frozenset(self.settings.vlm_endpoints))
        cap = work.options.get("repeat_loop_cap", self.settings.repeat_loop_cap)
        confirm = self.settings.confirm_repeated_stops
        limits = Limits(
            self.settings.max_attempts_per_page, self.settings.page_token_budget, cap, confirm
        )
        choice = next_attempt(plan, past, applies, limits)
        attempt: Attempt | None = None
        while choice is not None:
            if page.should_stop():
                return Closing(work, replace(_CANCELLED, rendered=facts))
            index, step = choice.index, plan[choice.index]
            if step.engine == "textlayer" and judge is not None:
                page, judge = judged_layer(page, judge), None
            asked = confirming_page(page, past, self.page_holds) if choice.confirming else page
            asked = resumed_page(asked, past, step)
            result = self._attempt(asked, step, choice.confirming)
            if page.rotation:
                result.params["rotation"] = page.rotation
            if result.invalid_reason == ROTATED:  # ask again with the page turned
                page = replace(page, rotation=rotation_after(page.rotation, result.answer_fields))
            if self.metrics:
                self.metrics.observe_attempt(step.engine, result)
            past.append(past_attempt(index, result))
            attempt = (index, step, result)
            if is_accepted(step, result.status):
                return self._kept(work, past, attempt, facts)
            choice = next_attempt(plan, past, applies, limits)
            if choice is not None:  # a later step follows: this attempt is recorded now
                with self.db.transaction() as conn:
                    page_path.record_attempt(conn, attempts.attempt_row(work, *attempt))
                attempt = None
        if page.should_stop():  # the cancel stopped the last attempt: not the engine's failure
            return Closing(work, replace(_CANCELLED, rendered=facts), attempt)
        category, error = failure_of(past)
        outcome = PageClose(PageStatus.FAILED, failure_category=category, error=error)
        return Closing(work, replace(outcome, rendered=facts), attempt)

    def _attempt(self, page: PageInput, step: PlanStep, confirming: bool) -> EngineResult:
        """One engine call; a confirming attempt runs the step with the relaxed stop the
        page's `confirming` unit asks for (app/engines/vlm_confirm.py)."""
        started = datetime.now(UTC)
        try:
            result = self.engines.for_step(step).transcribe(page, step)
        except (EngineError, RenderError) as exc:  # a model's own render can fail too
            result = EngineResult(
                text="",
                status=AttemptStatus.ERROR,
                started_at=started,
                ended_at=datetime.now(UTC),
                error=str(exc),
            )
        result.role = AttemptRole.CONFIRM if confirming else None
        return result

    def _kept(
        self, work: PageWork, past: list[PastAttempt], attempt: Attempt, facts: RenderFacts
    ) -> Closing:
        """The page's closing on its accepted attempt; where that was a confirming attempt,
        with the verdicts it proved false alarms."""
        _, step, result = attempt
        shown = tuple((s.kind, s.onset) for s in false_alarms(past))
        if self.metrics and shown:
            self.metrics.observe_false_alarms(result.model, len(shown))
        return Closing(work, answer_close(step, len(past), result.text, facts), attempt, shown)

    def _write(self, closings: list[Closing]) -> dict[int, PageOutcome]:
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
