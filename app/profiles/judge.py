"""Whether an answer that did not loop is the page: finished, complete, and readable."""

from __future__ import annotations

from dataclasses import dataclass

from app.profiles.model import ResponseRule
from app.profiles.parsers import Parsed, Unparseable, parse_answer

TRUNCATED = "truncated"
MISSING_END_TEXT = "missing end text"
UNPARSEABLE = "unparseable"
ROTATED = "rotated"


@dataclass(frozen=True)
class Judgement:
    """`invalid` is the reason an answer is refused (None: valid); `parsed` when it parsed."""

    invalid: str | None
    parsed: Parsed | None = None
    detail: str = ""


def judge_answer(rule: ResponseRule, finish_reason: str | None, text: str) -> Judgement:
    """An answer the server cut off, one missing its required end, or one that does not
    parse is invalid; otherwise its parsed Markdown and fields."""
    if rule.require_finish_stop and finish_reason not in (None, "stop"):
        return Judgement(TRUNCATED, detail=f"finish_reason {finish_reason}")
    if rule.require_end_text:  # as DeepSeek's run_dpsk_ocr_pdf.py:289-293: present, then cut
        if rule.require_end_text not in text:
            return Judgement(MISSING_END_TEXT, detail=f"no {rule.require_end_text!r} in it")
        text = text.replace(rule.require_end_text, "")
    try:
        parsed = parse_answer(rule, text)
    except Unparseable as exc:
        return Judgement(UNPARSEABLE, detail=str(exc))
    if rule.rotation_feedback and parsed.fields.get("is_rotation_valid") is False:
        turn = parsed.fields.get("rotation_correction", 0)
        return Judgement(ROTATED, parsed, detail=f"the model asks to turn the page by {turn}")
    return Judgement(None, parsed)


def rotation_after(rotation: int, fields: dict[str, object]) -> int:
    """The page's turn for the next ask: the model's correction added to the turn it saw
    (olmOCR's cumulative_rotation, mod 360)."""
    correction = fields.get("rotation_correction", 0)
    return (rotation + (correction if isinstance(correction, int) else 0)) % 360
