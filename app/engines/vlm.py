"""A vision-language model behind an OpenAI-compatible streaming API (vLLM first).

Every chunk goes through the online loop detector. The loop itself is stopped by the best stop
the endpoint offers (probed once, `vlm_stops`): Folio's vLLM plugin ends it inside the engine
step, vLLM's repetition_detection on exact repeats, an abort call by request id, or, always,
closing the stream. After a verdict the stream is read on briefly when the server will end
the request itself, so its final usage tells how many tokens it generated after the verdict.
What a stream comes to (its status, verdict and the profile's judgement) is `vlm_judge`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Coroutine
from contextlib import aclosing
from typing import Any, TypeVar

import httpx

from app.degeneration import DetectorConfig, LoopDetector
from app.domain import CLOSE_PROBE_TOKENS, EngineResult, PageInput
from app.engines.sse import sse_chunks, sse_lines
from app.engines.sse_http import SseResponse, post_sse
from app.engines.verdict_read import ScanReads, VerdictRead
from app.engines.vlm_close_probe import CloseLiveness, CloseProbe, probe_close
from app.engines.vlm_confirm import Tolerance, TolerantDetector
from app.engines.vlm_doctor import warn_missing_processors
from app.engines.vlm_grounding import (
    grounded_factory,
    grounding_params,
    grounding_xargs,
    hold_chars,
    settle_hold,
    verdict_read,
    with_read,
)
from app.engines.vlm_image import encode_image, model_image
from app.engines.vlm_judge import VlmJudge
from app.engines.vlm_resume import kept_text, resumed_body
from app.engines.vlm_stops import (
    REPETITION_DETECTION,
    EndpointStops,
    choose_stops,
    loop_stop_params,
    probe_stops,
    send_abort,
)
from app.engines.vlm_stream import (
    LoopDetecting,
    StreamOutcome,
    absorb_chunk,
    absorb_ending,
    check_end,
)
from app.errors import EngineError, TransportError
from app.profiles import Profile, resolve_profile
from app.profiles.request import messages, request_fields
from app.settings import PlanStep, VlmEndpoint, metrics_url_of
from app.vllm_plugin.behaviours import LOOP_STOP_ARG, detector_arg
from app.vllm_plugin.guard import GUARD_ARG, WINDOW_ARG

T = TypeVar("T")
logger = logging.getLogger(__name__)
# After a verdict, how long the stream is read on for the server's own stop to arrive.
_DRAIN_TOKENS = 64
_DRAIN_S = 10.0
# The thread every stream of an engine is read on (SSE client, JSON, the loop detector): a
# benchmark reads its CPU time by this name.
IO_THREAD_NAME = "vlm-io"


class _LoopThread:
    """An asyncio loop on a daemon thread, so synchronous page workers can share one client."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, daemon=True, name=IO_THREAD_NAME
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        # Finalise async generators left open by aborted streams (httpx's nested body
        # iterators) while the loop still runs, instead of warning about them at exit.
        asyncio.run_coroutine_threadsafe(self.loop.shutdown_asyncgens(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)


def _default_detector() -> LoopDetecting:
    return LoopDetector()


class NoLoopStop:
    """The detector of an attempt that runs with its loop stop off (a step's `loop_stop`, or
    the `detector_online` setting): it never calls a loop."""

    def feed(self, chunk: str) -> None:
        return None


class VlmEngine:
    name = "vlm"

    def __init__(
        self,
        endpoint_name: str,
        endpoint: VlmEndpoint,
        detector_factory: Callable[[], LoopDetecting] = _default_detector,
        profile: Profile | None = None,
        grounding_margin: int | None = None,
        scan_reads: ScanReads | None = None,
    ) -> None:
        self.endpoint_name = endpoint_name
        # Copies past the page's own count a unit may run to (None: verdicts not grounded).
        self.grounding_margin = grounding_margin
        # Where a page without a text layer is read at its first verdict (None: it is not).
        self.scan_reads = scan_reads
        self.endpoint = endpoint
        self.profile = profile or resolve_profile(endpoint.profile, endpoint.model)
        self.detector_factory = detector_factory
        # The plugin's detector runs with the thresholds the client's runs with.
        config = getattr(detector_factory(), "config", None)
        self._detector_config = config if isinstance(config, DetectorConfig) else None
        self._plugin_detector = detector_arg(self._detector_config)
        self._judge = VlmJudge(endpoint_name, endpoint, self.profile, self._detector_config)
        self._io = _LoopThread()
        self._slots: asyncio.Semaphore | None = None
        self._stops: EndpointStops | None = None
        self._stops_lock: asyncio.Lock | None = None
        # Streams each open their own connection (sse_http); probes and abort calls go on
        # kept-alive ones: an abort that must open a new connection to a busy server landed
        # 260-410 tokens late here (on a warm one: 0-13).
        self._control: httpx.AsyncClient | None = None
        self._processors_checked = False
        self._close = CloseLiveness()  # whether closing a stream stops the server's work
        self._open_streams = 0

    def configured_stops(self, found: EndpointStops | None = None) -> EndpointStops:
        """The stops to use: the probe's findings (none without a probe) and the settings."""
        e = self.endpoint
        return choose_stops(
            found or EndpointStops(), e.engine_plugin, e.abort_call, e.server_repetition_detection
        )

    def request_body(
        self, page: PageInput, step: PlanStep, stops: EndpointStops | None = None
    ) -> dict[str, Any]:
        """The chat completion request for one page under one plan step."""
        stops = stops or self.configured_stops()
        image = model_image(page, self.profile.image, self.endpoint.max_image_side)
        image_url = encode_image(image, self.profile.request.image_format)
        image_part = {"type": "image_url", "image_url": {"url": image_url}}
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": messages(self.profile, image_part),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        overrides = step.sampling() | {"max_tokens": step.max_tokens or self.endpoint.max_tokens}
        body |= request_fields(self.profile, overrides, self._folio_xargs(page, step, stops))
        if self.endpoint.openai_fields_only:  # a hosted API refuses vLLM's own fields
            for key in ("repetition_penalty", "top_k"):
                body.pop(key, None)
        if self.endpoint.stream_interval:
            body["stream_interval"] = self.endpoint.stream_interval
        # A token count on every chunk: tokens at the verdict, exactly (and chunks are not
        # tokens once stream_interval merges them).
        if stops.is_vllm or self.endpoint.stream_interval:
            body["stream_options"]["continuous_usage_stats"] = True
        if stops.repetition_detection:
            body["repetition_detection"] = dict(REPETITION_DETECTION)
        if kept := kept_text(page, self.endpoint.openai_fields_only):
            body = resumed_body(body, kept)
        return body

    def _folio_xargs(self, page: PageInput, step: PlanStep, stops: EndpointStops) -> dict[str, Any]:
        """Folio's own server-side arguments: the plugin's loop stop (asking the page where
        the client does) and n-gram guard."""
        xargs: dict[str, Any] = {}
        if stops.plugin:
            xargs = {LOOP_STOP_ARG: 1, **self._plugin_detector}
            xargs |= grounding_xargs(page, self.grounding_margin)
        if step.ngram_guard:  # the plugin's guard, asked for per request like its loop stop
            xargs[GUARD_ARG] = step.ngram_guard
            if step.ngram_window:
                xargs[WINDOW_ARG] = step.ngram_window
        return xargs

    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        return self._io.run(self._transcribe(page, step))

    async def _ensure_stops(self) -> tuple[EndpointStops, dict[str, Any]]:
        """The endpoint's stops, probed once; where the close is the stop relied on, whether
        it stops the server's work (`vlm_close_probe`). Second: what this call's attempt
        records of a close probe it ran (the server tokens it cost)."""
        stops = await self._probed_stops()
        ran = None
        if stops.relied_on == "client_close" and self.endpoint.close_probe:
            ran = await self._close.ensure(self._probe_close, idle=self._open_streams == 0)
        if ran is None or ran.generated is None:
            return stops, {}
        return stops, {CLOSE_PROBE_TOKENS: int(ran.generated)}

    async def _probe_close(self) -> CloseProbe:
        assert self._control is not None
        e = self.endpoint
        return await probe_close(
            self._control, e.base_url, e.model, metrics_url_of(e), self._headers()
        )

    async def _probed_stops(self) -> EndpointStops:
        """The endpoint's stops, probed once; an unreachable server is probed again later."""
        e = self.endpoint
        if "auto" not in (e.engine_plugin, e.abort_call, e.server_repetition_detection):
            return self.configured_stops()
        self._stops_lock = self._stops_lock or asyncio.Lock()
        async with self._stops_lock:
            if self._stops is None:
                assert self._control is not None
                try:
                    found = await probe_stops(self._control, e.base_url, e.model)
                except httpx.TransportError:
                    return self.configured_stops()
                self._stops = self.configured_stops(found)
                if found.probe_note and not found.plugin:
                    logger.warning("endpoint %s: %s", self.endpoint_name, found.probe_note)
        return self._stops

    async def _check_processors(self) -> None:
        """Once: warn when the server lacks a processor the profile needs against loops."""
        if self._processors_checked or not self.profile.probes:
            return
        self._processors_checked = True
        assert self._control is not None
        with contextlib.suppress(httpx.HTTPError):
            await warn_missing_processors(self._control, self.endpoint, self.profile)

    async def _transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        slots = self._ensure_client()
        stops, probed = await self._ensure_stops()
        if page.should_stop():
            raise EngineError("the job was cancelled before the request")
        await self._check_processors()
        confirming = Tolerance.of(page.confirming) if page.confirming else None
        # A confirming attempt's stop is the client's tolerant detector: the server's stops
        # know nothing of the unit it may repeat.
        relaxed = not step.loop_stop or page.confirming is not None
        used = stops.without_loop_stops() if relaxed else stops
        # PNG encoding takes 50-500 ms of CPU: off the event loop, or every request in flight
        # waits behind it (one loop thread serves them all).
        body = await asyncio.to_thread(self.request_body, page, step, used)
        deadline = time.monotonic() + self.endpoint.transport_retry_s
        retries = 0
        asks = step.loop_stop and confirming is None
        read = verdict_read(self.scan_reads, page, self.grounding_margin) if asks else None
        detector = self._detector_for(page, step, confirming, read, used.plugin)
        kept = kept_text(page, self.endpoint.openai_fields_only)
        async with slots:
            while True:
                try:
                    outcome = await self._stream(body, used, page.should_stop, detector, kept)
                    break
                except TransportError as exc:
                    retries += 1
                    if time.monotonic() >= deadline:
                        return self._judge.transport_failure(body, exc, retries, probed)
                    await asyncio.sleep(
                        min(10.0, 0.5 * 2 ** min(retries, 5)) * random.uniform(0.5, 1.5)
                    )
        # The read the verdict asked for, waited for once the slot is free (not on a cancel).
        outcome.grounding = await with_read(outcome.grounding, None if outcome.cancelled else read)
        close = self._close.params()
        loop_stop = step.loop_stop and confirming is None
        result = self._judge.result(
            page, body, outcome, retries, used, probed, close, loop_stop, confirming
        )
        result.params |= loop_stop_params(stops)  # the endpoint's stop, not this attempt's
        if not step.loop_stop:
            result.params["loop_stop_off"] = True
        if kept:  # it continued the text before the last attempt's loop
            result.params["resumed_from_chars"] = len(kept)
        if confirming is not None:  # the relaxed stop it ran under
            result.params |= {
                "confirm_bound": confirming.bound,
                "confirm_copies_at_cut": confirming.at_cut,
                "confirm_page_holds": confirming.page_holds,
            }
        return result

    def _detector_for(
        self,
        page: PageInput,
        step: PlanStep,
        confirming: Tolerance | None,
        read: VerdictRead | None = None,
        plugin: bool = False,
    ) -> Callable[[], LoopDetecting]:
        """The stream's detector: none with the loop stop off; on a confirming attempt, one
        that lets the confirmed unit run up to its bound."""
        if not step.loop_stop:
            return NoLoopStop
        # Each verdict asked of the page's own text first, or of its read at the verdict.
        hold = hold_chars(self.scan_reads, plugin)
        grounded = grounded_factory(
            self.detector_factory, self._detector_config, page, self.grounding_margin, read, hold
        )
        if confirming is not None:
            return lambda: TolerantDetector(grounded, confirming)
        return grounded

    def _ensure_client(self) -> asyncio.Semaphore:
        if self._control is None or self._slots is None:
            timeout = httpx.Timeout(30.0, connect=10.0)
            self._control = httpx.AsyncClient(headers=self._headers(), timeout=timeout)
            self._slots = asyncio.Semaphore(self.endpoint.max_concurrency)
        return self._slots

    def _headers(self) -> dict[str, str]:
        key = self.endpoint.api_key
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def _stream(
        self,
        body: dict[str, Any],
        stops: EndpointStops,
        should_stop: Callable[[], bool] = lambda: False,
        detector_factory: Callable[[], LoopDetecting] | None = None,
        kept: str = "",
    ) -> StreamOutcome:
        """One streamed request; `kept`: the text it continues, read first by the detector
        and the start of the answer."""
        outcome = StreamOutcome(text=kept)
        detector = (detector_factory or self.detector_factory)()
        if kept:
            detector.feed(kept)
        url = self.endpoint.base_url.rstrip("/") + "/chat/completions"
        timeout = self.endpoint.request_timeout_s
        sent = time.perf_counter()
        response = await post_sse(url, body, self._headers(), 10.0, timeout)
        self._open_streams += 1
        try:
            await _raise_for_status(response, timeout)
            lines = sse_lines(response.texts(timeout))
            async with aclosing(lines), aclosing(sse_chunks(lines)) as chunks:
                async for chunk in chunks:
                    looped = absorb_chunk(chunk, outcome, detector, sent)
                    if looped or should_stop():  # a cancel takes the loop's stops
                        outcome.cancelled = not looped
                        outcome.aborted = True
                        await self._stop_loop(outcome, stops, chunks)
                        break
        finally:
            self._open_streams -= 1
            await response.close()  # at a verdict or a cancel: vLLM sees the client leave
        await settle_hold(outcome, detector)  # the answer ended while a verdict waited
        if outcome.verdict is None and stops.plugin and outcome.finish_reason == "stop":
            check_end(outcome, detector)
        outcome.grounding = grounding_params(detector)
        return outcome

    async def _stop_loop(self, outcome: StreamOutcome, stops: EndpointStops, chunks: Any) -> None:
        """Folio called a loop: send the abort call if there is one, then read on briefly
        while the server ends the request itself (plugin, abort), for its final usage."""
        outcome.tokens_at_verdict = outcome.completion_tokens or outcome.content_chunks
        if stops.abort_path and outcome.request_id:
            assert self._control is not None
            outcome.abort_sent = await send_abort(
                self._control, self.endpoint.base_url, stops.abort_path, outcome.request_id
            )
        if not ((stops.plugin and not outcome.cancelled) or outcome.abort_sent):
            return  # the plugin ends loops only: a cancelled stream is closed at once
        limit = outcome.tokens_at_verdict + _DRAIN_TOKENS
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_DRAIN_S):
                async for chunk in chunks:
                    absorb_ending(chunk, outcome)
                    if (outcome.completion_tokens or 0) > limit:
                        return  # the server did not stop: close the stream

    def close(self) -> None:
        if self._control is not None:
            self._io.run(self._control.aclose())
        self._io.stop()


async def _raise_for_status(response: SseResponse, timeout: float) -> None:
    if response.status >= 500:
        raise TransportError(f"server error {response.status}")
    if response.status >= 400:
        detail = (await response.read_text(timeout))[:500]
        raise EngineError(f"request refused ({response.status}): {detail}")
