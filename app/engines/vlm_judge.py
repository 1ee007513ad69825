"""What a VLM attempt comes to: the stream's outcome judged (a loop verdict, the server's own
stop, an empty answer, the profile's judgement of the answer) and recorded as an EngineResult,
with the request's parameters that the attempt row keeps. `VlmEngine` streams; this reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.degeneration import DetectorConfig, score_output
from app.domain import AttemptStatus, EngineResult, PageInput, Verdict
from app.engines.vlm_confirm import Tolerance, judge_confirming
from app.engines.vlm_positions import vlm_positions
from app.engines.vlm_stops import EndpointStops, stop_record
from app.engines.vlm_stream import StreamOutcome, finish_reason_of
from app.errors import TransportError
from app.profiles import Profile
from app.profiles.judge import TRUNCATED, Judgement, judge_answer
from app.settings import VlmEndpoint
from app.vllm_plugin.behaviours import PAGE_TEXT_ARG

_SAMPLING_KEYS = ("temperature", "top_p", "top_k", "presence_penalty", "frequency_penalty", "seed")
_REQUEST_KEYS = (
    "repetition_penalty",
    "max_tokens",
    "stop",
    "repetition_detection",
    "vllm_xargs",
    "stream_interval",
)


@dataclass(frozen=True)
class VlmJudge:
    """Reads one endpoint's attempts under one profile."""

    endpoint_name: str
    endpoint: VlmEndpoint
    profile: Profile
    detector: DetectorConfig | None = None  # the user's thresholds, for a confirming answer

    def result(
        self,
        page: PageInput,
        body: dict[str, Any],
        outcome: StreamOutcome,
        retries: int,
        stops: EndpointStops,
        probed: dict[str, Any],
        close: dict[str, Any],
        loop_stop: bool = True,
        confirming: Tolerance | None = None,
    ) -> EngineResult:
        """The attempt a finished (or stopped) stream makes; `close` is what the engine
        knows of whether closing a stream stops the server's work. A confirming attempt's
        answer must also end before its cap and pass the offline scorer with only the
        confirmed unit tolerated (`vlm_confirm`)."""
        max_tokens = int(body["max_tokens"])
        estimated = outcome.completion_tokens is None
        tokens = outcome.content_chunks if estimated else outcome.completion_tokens
        status, verdict = self._judge(outcome, tokens, max_tokens)
        judgement = Judgement(None)
        if status is AttemptStatus.OK:
            judgement = self._judge_answer(outcome, loop_stop)
            status = AttemptStatus.INVALID if judgement.invalid else status
        if status is AttemptStatus.OK and confirming is not None:
            confirmed = judge_confirming(
                outcome.text, confirming, outcome.finish_reason, tokens, max_tokens, self.detector
            )
            if confirmed.verdict is not None:
                status, verdict = AttemptStatus.DEGENERATE, confirmed.verdict
                judgement = Judgement(None, detail=f"a loop that ended: {confirmed.reason}")
        parsed = judgement.parsed if status is AttemptStatus.OK else None
        text = parsed.markdown if parsed else outcome.text.strip()
        stop = stop_record(
            verdict=outcome.verdict is not None or outcome.cancelled,
            finish_reason=outcome.finish_reason,
            stops=stops,
            abort_sent=outcome.abort_sent,
            final_tokens=outcome.completion_tokens,
            tokens_at_verdict=outcome.tokens_at_verdict,
        )
        return EngineResult(
            text=text,
            status=status,
            started_at=outcome.started_at,
            ended_at=datetime.now(UTC),
            model=self.endpoint.model,
            endpoint=self.endpoint_name,
            params=self._params(body, retries) | close | probed | outcome.grounding,
            prompt_version=self.profile.tag,
            finish_reason=finish_reason_of(outcome),
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=tokens,
            tokens_estimated=estimated,
            max_tokens=max_tokens,
            ttft_s=outcome.ttft_s,
            verdict=verdict,
            aborted=outcome.aborted,
            stop_mechanism=stop.mechanism,
            tokens_after_verdict=stop.tokens_after_verdict,
            tokens_after_verdict_note=stop.note,
            invalid_reason=judgement.invalid,
            answer_fields=judgement.parsed.fields if judgement.parsed else {},
            positions=vlm_positions(page, self.profile, parsed, self.endpoint.max_image_side),
            error=(
                "the job was cancelled: the request was stopped"
                if outcome.cancelled
                else judgement.detail or None
            ),
        )

    def _judge(
        self, outcome: StreamOutcome, tokens: int | None, max_tokens: int
    ) -> tuple[AttemptStatus, Verdict | None]:
        if outcome.cancelled:  # stopped by a cancel: its text is cut off, not an answer
            return AttemptStatus.ERROR, None
        if outcome.verdict is not None:
            return AttemptStatus.DEGENERATE, outcome.verdict
        if outcome.finish_reason in ("repetition", "length"):
            score = score_output(outcome.text, outcome.finish_reason, tokens, max_tokens)
            server_stop = outcome.finish_reason == "repetition"
            if score.degenerate or server_stop:
                kind = score.kind or "server"
                return AttemptStatus.DEGENERATE, Verdict(kind, score.period or 0, score.onset or 0)
        if not outcome.text.strip():
            return AttemptStatus.EMPTY, None
        return AttemptStatus.OK, None

    def _judge_answer(self, outcome: StreamOutcome, loop_stop: bool) -> Judgement:
        """The profile's judgement; without the loop stop an answer must also end before
        its cap: one that runs to it is no evidence the page is healthy."""
        if not loop_stop and outcome.finish_reason != "stop":
            detail = f"finish_reason {outcome.finish_reason}, with the loop stop off"
            return Judgement(TRUNCATED, detail=detail)
        return judge_answer(self.profile.response, outcome.finish_reason, outcome.text)

    def _params(self, body: dict[str, Any], retries: int) -> dict[str, Any]:
        keys = (*_SAMPLING_KEYS, *_REQUEST_KEYS)
        params = {k: body[k] for k in keys if k in body}
        xargs = params.get("vllm_xargs")
        if xargs and PAGE_TEXT_ARG in xargs:  # the page's text is the document's, not a param
            params["vllm_xargs"] = {k: v for k, v in xargs.items() if k != PAGE_TEXT_ARG}
        if retries:
            params["transport_retries"] = retries
        return params

    def transport_failure(
        self, body: dict[str, Any], exc: TransportError, retries: int, probed: dict[str, Any]
    ) -> EngineResult:
        now = datetime.now(UTC)
        return EngineResult(
            text="",
            status=AttemptStatus.TRANSPORT_ERROR,
            started_at=now,
            ended_at=now,
            model=self.endpoint.model,
            endpoint=self.endpoint_name,
            params=self._params(body, retries) | probed,
            prompt_version=self.profile.tag,
            max_tokens=int(body["max_tokens"]),
            error=f"endpoint unreachable after {retries} tries: {exc}",
        )
