"""The pure steps around one page's attempts: the page as an engine gets it (a confirming
attempt's included), what the retry policy keeps of an attempt, and how a page closes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache, partial
from pathlib import Path

from app.db.page_path import PageClose, RenderFacts
from app.degeneration.grounding import PageText, unit_readings
from app.domain import (
    AttemptRole,
    AttemptStatus,
    ConfirmedUnit,
    EngineResult,
    PageInput,
    PageStatus,
)
from app.errors import RenderError
from app.pdf.render import PageOutline, rasterize, rasterize_fitted
from app.pipeline.text_layer import LayerVerdict
from app.positions import PageGeometry
from app.retry.plan import (
    PastAttempt,
    confirmed_stop,
    is_accepted,
    loop_stop,
    repeated_loops,
    resume_prefix,
)
from app.settings import PlanStep

# The text-layer gate's judgement, taken when needed; it asks the page's stop between stages.
LayerJudge = Callable[[Callable[[], bool]], LayerVerdict]
# How many copies of a repeated unit the page's own text holds (None: not known).
UnitCount = Callable[[str, PageInput], int | None]


def copies_unknown(unit: str, page: PageInput) -> int | None:
    """No count of the unit in the page: a confirming attempt's bound is then a multiple of
    the copies its stop cut (app/engines/vlm_confirm.py)."""
    return None


def copies_in_page(unit: str, page: PageInput) -> int | None:
    """How often the page's usable text layer (else a scan's read at an earlier verdict) holds
    the unit, read as grounding reads it (`app.degeneration.grounding`); None where the page
    has no such text or the unit holds no words the page could hold (fill, rules, numbers)."""
    usable = page.text_layer_usable and page.text_layer.strip()
    layer = page.text_layer if usable else page.page_read
    readings = unit_readings(unit)
    if not (layer and layer.strip() and readings):
        return None
    text = PageText(layer)
    return max(text.copies(reading) for reading in readings)


def read_of(result: EngineResult) -> str | None:
    """The page's text as the attempt's read at its verdict found it (a scan), if any."""
    grounding = result.params.get("grounding")
    read = grounding.get("read") if isinstance(grounding, dict) else None
    text = read.get("text") if isinstance(read, dict) else None
    return text if isinstance(text, str) and text.strip() else None


def resumed_page(page: PageInput, past: list[PastAttempt], step: PlanStep) -> PageInput:
    """The page as a retry that resumes past the last attempt's loop gets it, where the step
    asks for that and the last attempt was cut with text before its loop."""
    if not (step.resume_after_loop and step.engine == "vlm"):
        return page
    kept = resume_prefix(past)
    return replace(page, resume_from=kept) if kept else page


def confirming_page(page: PageInput, past: list[PastAttempt], page_holds: UnitCount) -> PageInput:
    """The page as a confirming attempt gets it: with the unit its stop may let run, and how
    often the page's own text holds that unit where `page_holds` knows."""
    stop = confirmed_stop(past)
    if stop is None:
        return page
    unit = stop.unit
    confirmed = ConfirmedUnit(stop.kind, unit, stop.text, stop.onset, page_holds(unit, page))
    return replace(page, confirming=confirmed)


def page_input(
    path: Path, number: int, dpi: int, max_side: int, outline: PageOutline, usable: bool
) -> PageInput:
    """Page `number` of `path`, read as `outline`, as engines get it: rasterised only when an
    engine asks, at Folio's DPI or at a model's own size, each raster made once for all the
    page's attempts."""
    return PageInput(
        cache(partial(rasterize_fitted, path, number, dpi, max_side)),
        outline.text_layer,
        usable,
        geometry=PageGeometry(*outline.size_pt, *outline.pixels),
        points=outline.size_pt,
        render_at=cache(partial(rasterize, path, number)),
        pixels=outline.pixels,
    )


def judged_layer(page: PageInput, judge: LayerJudge) -> PageInput:
    """The page with the gate's judgement of its text layer (a layer that cannot be read
    again is refused, so the plan moves on)."""
    try:
        layer = judge(page.should_stop)
    except RenderError as exc:
        layer = LayerVerdict(rejection=f"unreadable: {exc}")
    return replace(
        page,
        text_layer_markdown=layer.markdown,
        text_layer_rejection=layer.rejection,
        text_layer_words=layer.words,
    )


def past_attempt(index: int, result: EngineResult) -> PastAttempt:
    """What the next choice needs of an attempt that just ended."""
    verdict = result.verdict
    loop = (verdict.kind, verdict.period) if verdict else None
    stop = None
    if verdict:
        stop = loop_stop(
            verdict.kind,
            verdict.onset,
            result.text,
            result.aborted,
            result.finish_reason,
            verdict.period,
        )
    confirming = result.role is AttemptRole.CONFIRM
    return PastAttempt(index, result.status, result.completion_tokens or 0, loop, stop, confirming)


def answer_close(
    step: PlanStep, attempts: int, text: str, facts: RenderFacts | None = None
) -> PageClose:
    status = PageStatus.SUCCEEDED if attempts == 1 else PageStatus.FALLBACK
    return PageClose(status, text=text, engine=step.engine, step=step.name, rendered=facts)


def accepted_attempt(plan: list[PlanStep], past: list[PastAttempt]) -> PastAttempt | None:
    """The attempt already accepted as the page's answer, if any."""
    return next((a for a in past if is_accepted(plan[a.step_index], a.status)), None)


def failure_of(past: list[PastAttempt]) -> tuple[str, str]:
    """Why a page that ran out of steps failed (category, message), from its attempts."""
    if not past:
        return "no_engine", "no step of the plan applies to this page"
    statuses = [a.status for a in past]
    if AttemptStatus.DEGENERATE in statuses and AttemptStatus.OK not in statuses:
        category = "degenerate"
    elif AttemptStatus.INVALID in statuses:
        category = "invalid"
    elif AttemptStatus.TRANSPORT_ERROR in statuses:
        category = "transport"
    elif all(s is AttemptStatus.EMPTY for s in statuses):
        category = "empty"
    elif all(s is AttemptStatus.REJECTED for s in statuses):
        category = "textlayer_rejected"
    else:
        category = "engine"
    summary = ", ".join(s.value for s in statuses)
    repeats = repeated_loops(past)
    if repeats:
        summary += f"; the same loop came back {repeats} time(s)"
    return category, f"every attempt failed ({summary})"
