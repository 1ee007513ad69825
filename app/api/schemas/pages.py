"""What the API answers about pages and their attempts (text, positions, verdicts), built from
ORM rows at the route's edge."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.db.models import Attempt, Page
from app.domain import Outcome, page_outcome


class PageOut(BaseModel):
    id: int
    document_id: int
    number: int
    status: str
    outcome: Outcome = Field(
        description="ok (first attempt answered), fallback (a later step answered), "
        "degenerate (every attempt looped: no text), failed (no text; failure_category says "
        "why), or pending/running."
    )
    retryable: bool | None = Field(
        description="For a page without text: whether a new try may succeed (transport, "
        "internal, cancelled) or not (degenerate, render, empty ...); null otherwise."
    )
    engine: str | None
    step: str | None
    failure_category: str | None
    error: str | None

    @classmethod
    def fields_of(cls, p: Page) -> dict[str, Any]:
        outcome, retryable = page_outcome(p.status, p.failure_category)
        return {
            "id": p.id,
            "document_id": p.document_id,
            "number": p.number,
            "status": p.status,
            "outcome": outcome,
            "retryable": retryable,
            "engine": p.final_engine,
            "step": p.final_step,
            "failure_category": p.failure_category,
            "error": p.error,
        }

    @classmethod
    def of(cls, p: Page) -> PageOut:
        return cls(**cls.fields_of(p))


class VerdictOut(BaseModel):
    kind: str
    period: int | None
    onset: int | None


# AttemptOut's fields that no attempt column holds under the same name.
_RENAMED = ("step", "verdict", "loop_unit", "cost_usd", "decoding", "grounding")
# The attempt's params that say how it decoded (the rest are notes of the engine's own).
DECODING_PARAMS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "frequency_penalty",
    "presence_penalty",
    "max_tokens",
    "seed",
    "resumed_from_chars",
)


class AttemptOut(BaseModel):
    id: int
    step_index: int
    step: str
    engine: str
    model: str | None
    status: str = Field(
        description="ok, degenerate (a loop verdict cut it), invalid, empty, error, "
        "transport_error, rejected (text layer refused), or false_alarm (a loop verdict that "
        "the page's confirming attempt proved wrong: its answer was kept)."
    )
    role: str | None = Field(
        default=None,
        description="confirm: the step run again with the loop stop off, after a retry was "
        "stopped by the same verdict at the same place on the same text; null: a plan step.",
    )
    verdict: VerdictOut | None
    aborted: bool
    finish_reason: str | None
    stop_mechanism: str | None = Field(
        description="Which stop ended the attempt: engine_plugin, abort_call, "
        "server_repetition, client_close or none."
    )
    tokens_after_verdict: int | None = Field(
        description="Tokens the server generated after Folio's loop verdict; null where "
        "the server does not tell (tokens_after_verdict_note says why)."
    )
    tokens_after_verdict_note: str | None
    duration_s: float
    prompt_tokens: int | None
    completion_tokens: int | None
    error: str | None
    decoding: dict[str, Any] = Field(
        default_factory=dict,
        description="How the attempt decoded: temperature, top_p, penalties, max_tokens, "
        "seed, and resumed_from_chars for a retry that went on from the text before a loop.",
    )
    output: str | None = Field(default=None, description="What the engine wrote, as received.")
    loop_unit: str | None = Field(
        default=None,
        description="The loop's first copy: output[verdict.onset : verdict.onset + "
        "verdict.period], where the verdict has both.",
    )
    grounding: dict[str, Any] | None = Field(
        default=None,
        description="What the page's own text held when a loop verdict was checked against "
        "it: `verdict` {page, output} copies of the unit that stood, `overruled` the verdicts "
        "the page held as often (unit, page, output, at); null where none was checked.",
    )
    cost_usd: float | None = Field(
        default=None, description="The attempt's cost as the job's report prices it."
    )

    @classmethod
    def of(cls, a: Attempt, cost_usd: float | None = None) -> AttemptOut:
        verdict = (
            VerdictOut(kind=a.verdict_kind, period=a.verdict_period, onset=a.verdict_onset)
            if a.verdict_kind
            else None
        )
        # Every other field is the attempt's column of the same name.
        same = {name: getattr(a, name) for name in cls.model_fields if name not in _RENAMED}
        params = a.params or {}
        return cls(
            **same,
            step=a.step_name,
            verdict=verdict,
            loop_unit=_loop_unit(a),
            decoding={k: params[k] for k in DECODING_PARAMS if params.get(k) is not None},
            grounding=params.get("grounding"),
            cost_usd=cost_usd,
        )


def _loop_unit(a: Attempt) -> str | None:
    if not a.output or a.verdict_onset is None or not a.verdict_period:
        return None
    return a.output[a.verdict_onset : a.verdict_onset + a.verdict_period] or None


POSITIONS_EXAMPLE = {
    "source": "textlayer",
    "page": {"width_pt": 612.0, "height_pt": 792.0, "width_px": 1700, "height_px": 2200},
    "lines": [
        {
            "text": "Annual report",
            "box_pt": [72.0, 71.2, 160.3, 85.1],
            "box_px": [200.0, 197.8, 445.3, 236.4],
        }
    ],
    "words": [
        {
            "text": "Annual",
            "box_pt": [72.0, 71.2, 110.5, 85.1],
            "box_px": [200.0, 197.8, 306.9, 236.4],
            "line": 0,
        },
        {
            "text": "report",
            "box_pt": [113.2, 71.2, 160.3, 85.1],
            "box_px": [314.4, 197.8, 445.3, 236.4],
            "line": 0,
        },
    ],
}


VLM_POSITIONS_EXAMPLE = {
    "source": "vlm",
    "profile": "deepseek-ocr-grounding@2025-10",
    "page": {"width_pt": 612.0, "height_pt": 792.0, "width_px": 1224, "height_px": 1584},
    "lines": [],
    "words": [],
    "blocks": [
        {
            "text": "# Annual report",
            "box_pt": [61.26, 39.64, 551.35, 95.14],
            "box_px": [122.5, 79.3, 1102.7, 190.3],
            "category": "title",
        }
    ],
}


class PageDetail(PageOut):
    text: str | None
    positions: dict[str, Any] | None = Field(
        description="Words and lines of the answer with their boxes, [x0, y0, x1, y1] from the "
        "top left, in PDF points (box_pt) and in pixels of the page as rendered (box_px); for "
        "a VLM whose profile places blocks (source vlm), its blocks with their category, the "
        "pixels being those of the image sent to the model; null where the engine that "
        "answered gives none.",
        examples=[POSITIONS_EXAMPLE, VLM_POSITIONS_EXAMPLE],
    )
    attempts: list[AttemptOut]

    @classmethod
    def detail_of(cls, p: Page, costs: dict[int, float] | None = None) -> PageDetail:
        attempts = [AttemptOut.of(a, (costs or {}).get(a.id)) for a in p.attempts]
        answer = next(
            (
                a
                for a in reversed(p.attempts)
                if a.step_name == p.final_step and a.status in ANSWERS
            ),
            None,
        )
        positions = answer.positions if answer is not None and p.final_step else None
        return cls(**cls.fields_of(p), text=p.text, positions=positions, attempts=attempts)


ANSWERS = ("ok", "empty")
