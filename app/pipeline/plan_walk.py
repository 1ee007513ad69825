"""Walking a page's retry plan: each attempt the policy chooses (app/retry/plan.py), run on
its engine, until one is accepted, the plan runs out, the job is cancelled or the page runs
past its time budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from app.db.page_path import PageClose, PageWork, RenderFacts
from app.domain import AttemptRole, AttemptStatus, EngineResult, PageInput, PageStatus
from app.engines.registry import EngineSet
from app.errors import EngineError, RenderError
from app.pipeline.page_attempts import (
    LayerJudge,
    UnitCount,
    answer_close,
    confirming_page,
    failure_of,
    judged_layer,
    past_attempt,
    read_of,
    resumed_page,
)
from app.pipeline.page_stop import stopped_close
from app.pipeline.page_transactions import Attempt, Closing
from app.profiles.judge import ROTATED, rotation_after
from app.report.metrics import FolioMetrics
from app.retry.plan import Limits, PageFacts, PastAttempt, false_alarms, is_accepted, next_attempt
from app.settings import PlanStep, Settings

# Records an attempt that a later step follows, as soon as it ends.
AttemptRecorder = Callable[[PageWork, Attempt], None]


class PlanWalker:
    """Runs a page's attempts on `engines` as its job's plan and the settings' limits say."""

    def __init__(
        self,
        settings: Settings,
        engines: EngineSet,
        record: AttemptRecorder,
        page_holds: UnitCount,
        metrics: FolioMetrics | None = None,
    ) -> None:
        self.settings = settings
        self.engines = engines
        self.record = record
        # A confirming attempt's bound: what the page holds of its unit, where grounding asks.
        self.page_holds = page_holds
        self.metrics = metrics

    def walk(
        self,
        work: PageWork,
        page: PageInput,
        facts: RenderFacts,
        past: list[PastAttempt],
        judge: LayerJudge | None = None,
    ) -> Closing:
        """The page's closing: on its accepted attempt, or failed once the plan runs out."""
        plan = self.settings.plan(work.plan_name)
        applies = PageFacts(page.text_layer_usable, frozenset(self.settings.vlm_endpoints))
        limits = self._limits(work)
        choice = next_attempt(plan, past, applies, limits)
        attempt: Attempt | None = None
        while choice is not None:
            if page.should_stop():
                return Closing(work, replace(stopped_close(page.should_stop), rendered=facts))
            index, step = choice.index, plan[choice.index]
            if step.engine == "textlayer" and judge is not None:
                page, judge = judged_layer(page, judge), None
                if page.should_stop():  # stopped while the gate read the layer
                    return Closing(work, replace(stopped_close(page.should_stop), rendered=facts))
            asked = confirming_page(page, past, self.page_holds) if choice.confirming else page
            asked = resumed_page(asked, past, step)
            result = self._attempt(asked, step, choice.confirming)
            if page.rotation:
                result.params["rotation"] = page.rotation
            if result.invalid_reason == ROTATED:  # ask again with the page turned
                page = replace(page, rotation=rotation_after(page.rotation, result.answer_fields))
            if self.metrics:
                self.metrics.observe_attempt(step.engine, result)
            if not page.page_read and (read := read_of(result)):
                page = replace(page, page_read=read)  # later attempts ask it, not read again
            past.append(past_attempt(index, result))
            attempt = (index, step, result)
            if is_accepted(step, result.status):
                return self._kept(work, past, attempt, facts)
            choice = next_attempt(plan, past, applies, limits)
            if choice is not None:  # a later step follows: this attempt is recorded now
                self.record(work, attempt)
                attempt = None
        if page.should_stop():  # a stop ended the last attempt: not the engine's failure
            return Closing(work, replace(stopped_close(page.should_stop), rendered=facts), attempt)
        category, error = failure_of(past)
        outcome = PageClose(PageStatus.FAILED, failure_category=category, error=error)
        return Closing(work, replace(outcome, rendered=facts), attempt)

    def _limits(self, work: PageWork) -> Limits:
        cap = work.options.get("repeat_loop_cap", self.settings.repeat_loop_cap)
        confirm = self.settings.confirm_repeated_stops
        return Limits(
            self.settings.max_attempts_per_page, self.settings.page_token_budget, cap, confirm
        )

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
