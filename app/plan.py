"""Choosing a page's next attempt: a pure function of the plan, the history and the page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.domain import AttemptStatus
from app.settings import PlanStep


@dataclass(frozen=True)
class PageFacts:
    """What the choice may know of the page and of the deployment."""

    text_layer_usable: bool
    endpoints: frozenset[str]


@dataclass(frozen=True)
class PastAttempt:
    """The parts of an earlier attempt that steer the next choice."""

    step_index: int
    status: AttemptStatus
    completion_tokens: int = 0
    loop: tuple[str, int] | None = None  # a degenerate attempt's verdict: (kind, period)


@dataclass(frozen=True)
class Limits:
    max_attempts: int
    token_budget: int
    # VLM attempts on a page that may repeat a loop already seen on it (same verdict kind and
    # period); once reached, only the steps that cannot loop (text layer, Tesseract) are left.
    repeated_loops: int | None = None


def is_accepted(step: PlanStep, status: AttemptStatus) -> bool:
    """Whether an attempt's output is the page's answer.

    An empty answer from a non-generative engine means a blank page; from a VLM it is a miss.
    """
    if status is AttemptStatus.OK:
        return True
    return status is AttemptStatus.EMPTY and step.engine != "vlm"


def next_step(
    plan: Sequence[PlanStep], history: Sequence[PastAttempt], page: PageFacts, limits: Limits
) -> int | None:
    """Index in `plan` of the attempt to run next, or None when the page is done trying."""
    if any(is_accepted(plan[a.step_index], a.status) for a in history):
        return None
    if len(history) >= limits.max_attempts:
        return None
    spent = sum(a.completion_tokens for a in history)
    dead = {
        plan[a.step_index].endpoint for a in history if a.status is AttemptStatus.TRANSPORT_ERROR
    }
    if limits.repeated_loops is not None and repeated_loops(history) >= limits.repeated_loops:
        dead |= set(page.endpoints)  # the loop would come again: no more VLM attempts
    start = history[-1].step_index + 1 if history else 0
    for index in range(start, len(plan)):
        if _applicable(plan[index], page, dead, budget_left=limits.token_budget - spent):
            return index
    return None


def repeated_loops(history: Sequence[PastAttempt]) -> int:
    """Attempts whose loop verdict (kind and period) an earlier attempt on the page had."""
    seen: set[tuple[str, int]] = set()
    repeats = 0
    for attempt in history:
        if attempt.loop is None:
            continue
        repeats += attempt.loop in seen
        seen.add(attempt.loop)
    return repeats


def _applicable(step: PlanStep, page: PageFacts, dead: set[str | None], budget_left: int) -> bool:
    if step.engine == "textlayer":
        return page.text_layer_usable
    if step.engine == "vlm":
        return step.endpoint in page.endpoints and step.endpoint not in dead and budget_left > 0
    return True
