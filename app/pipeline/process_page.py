"""Processing one page: the single implementation behind the local executor and Celery tasks."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from app.db import repo
from app.db.engine import Database
from app.domain import AttemptStatus, EngineResult, PageInput, PageStatus
from app.engines.registry import EngineSet
from app.errors import EngineError, FolioError, RenderError
from app.metrics import FolioMetrics
from app.pdf.render import render_page
from app.pdf.textlayer import text_layer_is_usable
from app.pipeline.text_layer import LayerVerdict, judge_layer
from app.plan import Limits, PageFacts, PastAttempt, is_accepted, next_step
from app.servermetrics.sampler import ServerSampler
from app.settings import PlanStep, Settings
from app.textlayer import GateConfig
from app.textlayer.words import languages_for


class PageBusy(FolioError):
    """Another live worker holds the page; try again after its lease."""

    category = "busy"


class PageProcessor:
    """Renders a page, walks its attempt plan, and records every step in the database."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        engines: EngineSet,
        owner: str,
        metrics: FolioMetrics | None = None,
        sampler: ServerSampler | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.engines = engines
        self.owner = owner
        self.metrics = metrics
        self.sampler = sampler
        self.lease_s = settings.page_lease_s
        self.gate = GateConfig(languages_for(settings.tesseract_lang))

    def process(self, page_id: int) -> PageStatus:
        """Bring the page to a terminal status; a page already terminal is left as it is."""
        with self.db.session() as session:
            if repo.page_status(session, page_id).terminal:
                return repo.page_status(session, page_id)
            if not repo.claim_page(session, page_id, self.owner, self.lease_s):
                raise PageBusy(f"page {page_id} is held by another worker")
            work = repo.page_work(session, page_id)
            past = repo.history(session, page_id)
            answer = _accepted(self.settings.plan(work.plan_name), past)
            text = repo.attempt_output(session, page_id, answer.step_index) if answer else None
        if answer is not None:
            # A worker died between recording the answer and closing the page: close it now.
            return self._close_answered(work, past, answer, text)
        try:
            page = self._render(work)
        except RenderError as exc:
            return self._finish(work, PageStatus.FAILED, category="render", error=str(exc))
        endpoints = {s.endpoint for s in self.settings.plan(work.plan_name) if s.endpoint}
        if self.sampler:
            self.sampler.before_page(work.job_id, endpoints)
        try:
            return self._walk_plan(work, page, past)
        finally:
            if self.sampler:
                self.sampler.after_page(work.job_id, endpoints)

    def _render(self, work: repo.PageWork) -> PageInput:
        started = time.perf_counter()
        dpi = int(work.options.get("dpi") or self.settings.dpi)
        rendered = render_page(Path(work.path), work.number, dpi, self.settings.max_image_side)
        usable = text_layer_is_usable(rendered.text_layer, self.settings.textlayer_min_chars)
        layer = LayerVerdict()
        if usable:
            path, enforce = Path(work.path), self.settings.textlayer_gate
            layer = judge_layer(path, work.number, rendered, self.gate, enforce)
        with self.db.session() as session:
            repo.set_page_rendered(
                session, work.page_id, rendered.image.size, usable, time.perf_counter() - started
            )
        return PageInput(
            rendered.image, rendered.text_layer, usable, layer.markdown, layer.rejection
        )

    def _walk_plan(
        self, work: repo.PageWork, page: PageInput, past: list[PastAttempt]
    ) -> PageStatus:
        plan = self.settings.plan(work.plan_name)
        facts = PageFacts(page.text_layer_usable, frozenset(self.settings.vlm_endpoints))
        limits = Limits(self.settings.max_attempts_per_page, self.settings.page_token_budget)
        while (index := next_step(plan, past, facts, limits)) is not None:
            step = plan[index]
            result = self._attempt(page, step)
            with self.db.session() as session:
                repo.record_attempt(session, work, index, step, result)
            if self.metrics:
                self.metrics.observe_attempt(step.engine, result)
            past.append(PastAttempt(index, result.status, result.completion_tokens or 0))
            if is_accepted(step, result.status):
                status = PageStatus.SUCCEEDED if len(past) == 1 else PageStatus.FALLBACK
                return self._finish(work, status, text=result.text, step=step)
        category, error = _failure(past)
        return self._finish(work, PageStatus.FAILED, category=category, error=error)

    def _close_answered(
        self, work: repo.PageWork, past: list[PastAttempt], answer: PastAttempt, text: str | None
    ) -> PageStatus:
        step = self.settings.plan(work.plan_name)[answer.step_index]
        status = PageStatus.SUCCEEDED if len(past) == 1 else PageStatus.FALLBACK
        return self._finish(work, status, text=text or "", step=step)

    def _attempt(self, page: PageInput, step: PlanStep) -> EngineResult:
        started = datetime.now(UTC)
        try:
            return self.engines.for_step(step).transcribe(page, step)
        except EngineError as exc:
            return EngineResult(
                text="",
                status=AttemptStatus.ERROR,
                started_at=started,
                ended_at=datetime.now(UTC),
                error=str(exc),
            )

    def _finish(
        self,
        work: repo.PageWork,
        status: PageStatus,
        *,
        text: str | None = None,
        step: PlanStep | None = None,
        category: str | None = None,
        error: str | None = None,
    ) -> PageStatus:
        with self.db.session() as session:
            repo.finish_page(
                session,
                work.page_id,
                status,
                text=text,
                engine=step.engine if step else None,
                step=step.name if step else None,
                failure_category=category,
                error=error,
            )
            final = repo.page_status(session, work.page_id)
        if self.metrics:
            self.metrics.observe_page(final)
        return final


def _accepted(plan: list[PlanStep], past: list[PastAttempt]) -> PastAttempt | None:
    """The attempt already accepted as the page's answer, if any."""
    return next((a for a in past if is_accepted(plan[a.step_index], a.status)), None)


def _failure(past: list[PastAttempt]) -> tuple[str, str]:
    """Why a page that ran out of steps failed (category, message), from its attempts."""
    if not past:
        return "no_engine", "no step of the plan applies to this page"
    statuses = [a.status for a in past]
    if AttemptStatus.DEGENERATE in statuses and AttemptStatus.OK not in statuses:
        category = "degenerate"
    elif AttemptStatus.TRANSPORT_ERROR in statuses:
        category = "transport"
    elif all(s is AttemptStatus.EMPTY for s in statuses):
        category = "empty"
    elif all(s is AttemptStatus.REJECTED for s in statuses):
        category = "textlayer_rejected"
    else:
        category = "engine"
    summary = ", ".join(s.value for s in statuses)
    return category, f"every attempt failed ({summary})"
