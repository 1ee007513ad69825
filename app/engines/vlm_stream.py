"""Reading one streamed chat completion: what the engine keeps of each chunk.

Pure functions over the SSE chunks' JSON, so the streaming loop in `vlm` stays short: the
text and usage before a verdict, then only the server's finish reason and token count.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from app.domain import Verdict


class LoopDetecting(Protocol):
    """The online detector as the engine needs it."""

    def feed(self, chunk: str) -> Any: ...


@dataclass
class StreamOutcome:
    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    content_chunks: int = 0
    ttft_s: float | None = None
    verdict: Verdict | None = None
    aborted: bool = False
    request_id: str | None = None
    tokens_at_verdict: int | None = None
    tokens_at_last_content: int | None = None
    abort_sent: bool = False
    cancelled: bool = False  # the page's job was cancelled mid-stream
    grounding: dict[str, Any] = field(default_factory=dict)  # what the page's text answered
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def absorb_chunk(
    chunk: dict[str, Any], outcome: StreamOutcome, detector: LoopDetecting, sent: float
) -> bool:
    """Fold one chunk into the outcome; True when the detector calls a loop."""
    outcome.request_id = outcome.request_id or chunk.get("id")
    if usage := chunk.get("usage"):
        outcome.prompt_tokens = usage.get("prompt_tokens")
        outcome.completion_tokens = usage.get("completion_tokens")
    for choice in chunk.get("choices") or []:
        if choice.get("finish_reason"):
            outcome.finish_reason = choice["finish_reason"]
        piece = (choice.get("delta") or {}).get("content") or ""
        if not piece:
            continue
        if outcome.ttft_s is None:
            outcome.ttft_s = time.perf_counter() - sent
        outcome.content_chunks += 1
        outcome.tokens_at_last_content = outcome.completion_tokens
        outcome.text += piece
        verdict = detector.feed(piece)
        if verdict is not None:
            outcome.verdict = as_verdict(verdict)
            return True
    return False


def check_end(outcome: StreamOutcome, detector: LoopDetecting) -> None:
    """The plugin ended the request before the client's detector fired: test the end."""
    finish = getattr(detector, "finish", None)
    verdict = finish() if finish else None
    if verdict is not None:
        outcome.verdict = as_verdict(verdict)
        outcome.aborted = True
        outcome.tokens_at_verdict = outcome.tokens_at_last_content


def absorb_ending(chunk: dict[str, Any], outcome: StreamOutcome) -> None:
    """A chunk after the verdict: only the server's finish reason and token count matter."""
    if usage := chunk.get("usage"):
        outcome.completion_tokens = usage.get("completion_tokens")
    for choice in chunk.get("choices") or []:
        if choice.get("finish_reason"):
            outcome.finish_reason = choice["finish_reason"]


def finish_reason_of(outcome: StreamOutcome) -> str | None:
    """The server's own reason where it ended the request; "abort" where Folio stopped it."""
    if outcome.aborted and outcome.finish_reason not in ("stop", "repetition"):
        return "abort"
    return outcome.finish_reason


def as_verdict(verdict: Any) -> Verdict:
    return Verdict(
        kind=str(verdict.kind),
        period=int(verdict.period),
        onset=int(verdict.onset),
        repeats=int(getattr(verdict, "repeats", 0)),
        covered=int(getattr(verdict, "covered", 0)),
    )
