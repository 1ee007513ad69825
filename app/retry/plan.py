"""Choosing a page's next attempt: a pure function of the plan, the history and the page.

A retry under other decoding that the same loop verdict stops at the same place on the same
text is evidence the page is healthy and the verdict a false alarm (a passport's `<<<<` zone,
a wide table's rule row): the page's text repeats there, not the model. Such a page gets one
confirming attempt of that step, whose stop lets the confirmed unit (`confirmed_stop`), and
only it, run up to a bound; it is the page's answer only if it ends before the cap, passes the
profile's judge and passes the offline scorer with only that unit tolerated (the engine refuses
it otherwise: app/engines/vlm_confirm.py). A real loop passes the bound, or ends with more
copies than the bound: degeneration either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.domain import AttemptStatus
from app.settings import PlanStep
from app.textmatch import shingle_f1

# Two stops are at the same place when their texts' lengths and their loops' onsets differ by
# at most this share of the text, or this many characters (a few tokens of streaming lag:
# a verdict lands at the chunk that completes the evidence, up to 16 tokens a chunk) ...
SAME_PLACE_SHARE = 0.05
SAME_PLACE_CHARS = 64
# ... and on the same text when their 16-character pieces agree this well (shingle F1): one
# changed character costs about 16 of the pieces, so a 1,200-character text may differ in
# about four places; a loop that starts elsewhere or on another unit agrees far less.
SAME_TEXT_F1 = 0.9


@dataclass(frozen=True)
class PageFacts:
    """What the choice may know of the page and of the deployment."""

    text_layer_usable: bool
    endpoints: frozenset[str]


@dataclass(frozen=True)
class LoopStop:
    """Where a loop verdict cut an attempt short, and the text it had written by then."""

    kind: str
    onset: int
    text: str
    period: int = 0  # characters per copy of the unit (0: not known)

    @property
    def unit(self) -> str:
        """One copy of the repeated unit, as the text holds it at the onset."""
        end = self.onset + self.period if self.period else len(self.text)
        return self.text[self.onset : end]


@dataclass(frozen=True)
class PastAttempt:
    """The parts of an earlier attempt that steer the next choice."""

    step_index: int
    status: AttemptStatus
    completion_tokens: int = 0
    loop: tuple[str, int] | None = None  # a degenerate attempt's verdict: (kind, period)
    stop: LoopStop | None = None  # set when a verdict cut it short (not at its token cap)
    confirming: bool = False  # it ran to confirm a repeated stop, with the loop stop off


@dataclass(frozen=True)
class NextAttempt:
    """The plan step to run next; `confirming`: again, with the loop stop off."""

    index: int
    confirming: bool = False


@dataclass(frozen=True)
class Limits:
    max_attempts: int
    token_budget: int
    # VLM attempts on a page that may repeat a loop already seen on it (same verdict kind and
    # period); once reached, only the steps that cannot loop (text layer, Tesseract) are left.
    repeated_loops: int | None = None
    # Whether a stop repeated at the same place on the same text earns a confirming attempt.
    confirm_repeated_stops: bool = False


def is_accepted(step: PlanStep, status: AttemptStatus) -> bool:
    """Whether an attempt's output is the page's answer.

    An empty answer from a non-generative engine means a blank page; from a VLM it is a miss.
    """
    if status is AttemptStatus.OK:
        return True
    return status is AttemptStatus.EMPTY and step.engine != "vlm"


def next_attempt(
    plan: Sequence[PlanStep], history: Sequence[PastAttempt], page: PageFacts, limits: Limits
) -> NextAttempt | None:
    """The attempt to run next, or None when the page is done trying: a confirming attempt
    where the last one repeated an earlier stop, else the plan's next applicable step."""
    if limits.confirm_repeated_stops and (again := _to_confirm(plan, history, page, limits)):
        return again
    index = next_step(plan, history, page, limits)
    return None if index is None else NextAttempt(index)


def _to_confirm(
    plan: Sequence[PlanStep], history: Sequence[PastAttempt], page: PageFacts, limits: Limits
) -> NextAttempt | None:
    """The last attempt's step again, loop stop off, where that attempt repeated an earlier
    stop: once a page, within its attempt and token limits, on a live endpoint."""
    if _done(plan, history, limits) or not repeated_stop(history):
        return None
    if any(a.confirming for a in history):
        return None
    index = history[-1].step_index
    budget_left = limits.token_budget - sum(a.completion_tokens for a in history)
    if not _applicable(plan[index], page, _dead(plan, history), budget_left):
        return None
    return NextAttempt(index, confirming=True)


def next_step(
    plan: Sequence[PlanStep], history: Sequence[PastAttempt], page: PageFacts, limits: Limits
) -> int | None:
    """Index in `plan` of the step to run next, or None when the page is done trying."""
    if _done(plan, history, limits):
        return None
    spent = sum(a.completion_tokens for a in history)
    dead = _dead(plan, history)
    if limits.repeated_loops is not None and repeated_loops(history) >= limits.repeated_loops:
        dead |= set(page.endpoints)  # the loop would come again: no more VLM attempts
    start = history[-1].step_index + 1 if history else 0
    for index in range(start, len(plan)):
        if _applicable(plan[index], page, dead, budget_left=limits.token_budget - spent):
            return index
    return None


def loop_stop(
    kind: str | None,
    onset: int | None,
    text: str | None,
    aborted: bool,
    finish: str | None,
    period: int | None = None,
) -> LoopStop | None:
    """An attempt's stop, where a verdict (Folio's, or the server's own repetition stop) cut
    it short; None where it had no verdict or ran to its token cap."""
    if kind is None or not (aborted or finish == "repetition"):
        return None
    return LoopStop(kind, onset or 0, text or "", period or 0)


def resume_prefix(history: Sequence[PastAttempt]) -> str | None:
    """The text a retry may keep and ask the model to continue: the last attempt's, up to
    where its loop started, back to that line's start (the model writes the line afresh);
    None where the last attempt was not cut by a verdict or kept nothing before its loop."""
    if not history or (stop := history[-1].stop) is None:
        return None
    kept = stop.text[: stop.onset]
    line = kept.rfind("\n")
    kept = kept[: line + 1] if line >= 0 else kept
    return kept if kept.strip() else None


def confirmed_stop(history: Sequence[PastAttempt]) -> LoopStop | None:
    """The stop a confirming attempt run next settles: the last attempt's, repeated."""
    return history[-1].stop if repeated_stop(history) else None


def _done(plan: Sequence[PlanStep], history: Sequence[PastAttempt], limits: Limits) -> bool:
    accepted = any(is_accepted(plan[a.step_index], a.status) for a in history)
    return accepted or len(history) >= limits.max_attempts


def _dead(plan: Sequence[PlanStep], history: Sequence[PastAttempt]) -> set[str | None]:
    """Endpoints an attempt found unreachable."""
    return {
        plan[a.step_index].endpoint for a in history if a.status is AttemptStatus.TRANSPORT_ERROR
    }


def same_stop(a: LoopStop, b: LoopStop) -> bool:
    """Whether two stops are the same verdict at the same place on the same text."""
    slack = max(SAME_PLACE_CHARS, SAME_PLACE_SHARE * max(len(a.text), len(b.text)))
    if a.kind != b.kind or abs(a.onset - b.onset) > slack:
        return False
    return abs(len(a.text) - len(b.text)) <= slack and shingle_f1(a.text, b.text) >= SAME_TEXT_F1


def repeated_stop(history: Sequence[PastAttempt]) -> bool:
    """Whether the last attempt was cut short as an earlier one was (`same_stop`)."""
    if not history or (last := history[-1].stop) is None:
        return False
    return any(a.stop is not None and same_stop(a.stop, last) for a in history[:-1])


def false_alarms(history: Sequence[PastAttempt]) -> list[LoopStop]:
    """The stops an accepted confirming attempt (the last one) showed to be false alarms:
    those that repeat the stop it was run to confirm."""
    if len(history) < 2 or not history[-1].confirming:
        return []
    confirmed = history[-2].stop
    if confirmed is None:
        return []
    return [a.stop for a in history[:-1] if a.stop and same_stop(a.stop, confirmed)]


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
