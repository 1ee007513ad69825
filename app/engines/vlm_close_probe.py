"""Whether closing a stream stops the server's work: the close-liveness probe.

Where neither Folio's plugin nor an abort route is relied on, a loop is stopped by closing its
stream (`vlm_stops`). Nothing in the stream tells whether the close reached the engine: a proxy
between worker and server that buffers the stream or ignores the client's abort (nginx with
`proxy_ignore_client_abort on`) keeps the request running to `max_tokens`, and the worker never
hears of it. So the probe asks the server's own counters (vLLM's `/metrics`):

1. the server must be idle (no request running or waiting), else the verdict is "unverified";
2. a long greedy request (`ignore_eos`, a cap of up to 2,048 tokens) goes through the same
   client and path as the pages; once PROBE_READ tokens have arrived the counters are read
   (the probe must be the only request running) and the stream is closed;
3. the counters are read until the request has left the batch and the generation counter has
   stopped: "live" when it stopped short of its cap (the note gives the tokens after the
   reading before the close, and calls more than CLOSE_SLACK late); "NOT live" when it ran on
   to its cap, or had finished before the close (a stream that reaches the client late cannot
   stop a loop); "unverified" when another request shows (the prompt-token counter moved by
   more than the probe's prompt, or the gauges count more than it).

The verdict waits for the cap rather than calling a request that runs CLOSE_SLACK tokens past
the close dead: a client starved of CPU for a moment reads its counters late, which would read
as a close that ran on (a GPU runs a probe to its cap in 10-30 s).

vLLM counts no client disconnect (`request_success_total{finished_reason="abort"}` stays 0 on
0.32), so the judgement is on the token counter and the batch gauges.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from app.engines.sse import sse_chunks, sse_lines
from app.engines.sse_http import post_sse
from app.errors import FolioError, TransportError
from app.servermetrics.counters import (
    ServerCounters,
    ServerMetricsUnavailable,
    read_counters_async,
)

logger = logging.getLogger(__name__)
CloseVerdict = Literal["live", "NOT live", "unverified"]

PROBE_READ = 16  # tokens read before the close
PROBE_CAP = 2048  # at most; less where the model's context is shorter
# Tokens after the close beyond which a close is called late. vLLM computes at least 2 after
# a close under async scheduling (the step in flight and the one queued behind it) and tens
# when its one API server lags behind 256 streams (docs/loop-stop-gpu.md); a close that never
# reaches the engine lets the request run on to the cap, thousands of tokens more.
CLOSE_SLACK = 256
_POLL_S = 0.2
_SETTLE_S = 120.0  # generous: a loaded server may take long to show the request gone
_PROMPT = "Count from 1 to 100000, one number a line, and never stop."


@dataclass(frozen=True)
class CloseProbe:
    """What the probe found: `verdict`, and the figures behind it in words."""

    verdict: CloseVerdict
    note: str
    generated: float | None = None  # tokens the server generated for the probe, when known

    def params(self) -> dict[str, str]:
        """What an attempt records about it (in its params, beside `loop_stop`)."""
        return {"loop_stop_close": self.verdict, "loop_stop_close_probe": self.note}


class _Unverified(FolioError):
    """The counters cannot tell: other traffic, or no counters."""


async def probe_close(
    control: httpx.AsyncClient,
    base_url: str,
    model: str,
    metrics_url: str | None,
    headers: Mapping[str, str] | None = None,
) -> CloseProbe:
    """Close a long request early and judge from the server's counters whether it stopped."""
    if metrics_url is None:
        return CloseProbe("unverified", "close not probed: metrics_url is off")
    try:
        return await _probe(control, base_url, model, metrics_url, dict(headers or {}))
    except _Unverified as exc:
        return CloseProbe("unverified", f"close unverified: {exc}")


async def _probe(
    control: httpx.AsyncClient,
    base_url: str,
    model: str,
    metrics_url: str,
    headers: dict[str, str],
) -> CloseProbe:
    before = await _read(control, metrics_url)
    if _busy(before) > 0:
        raise _Unverified(f"the server is busy ({_busy(before):.0f} requests running or waiting)")
    cap = await _cap(control, base_url, model)
    if cap < 4 * CLOSE_SLACK:  # a request that ran on could not be told from one that stopped
        raise _Unverified(f"the model's context is too short for the probe ({cap} tokens)")
    body = _body(model, cap)
    url = base_url.rstrip("/") + "/chat/completions"
    try:
        response = await post_sse(url, body, headers, 10.0, 60.0)
    except FolioError as exc:
        raise _Unverified(f"probe request failed: {exc}") from exc
    try:
        if response.status != 200:
            detail = (await response.read_text(10.0))[:200]
            raise _Unverified(f"probe request refused ({response.status}): {detail}")
        received, prompt = await _read_tokens(response.texts(60.0))
        at_close = await _read(control, metrics_url)
    except TransportError as exc:  # the server went away mid-probe: try again when idle
        raise _Unverified(f"the probe's stream broke: {exc}") from exc
    finally:
        await response.close()
    return await _judge(control, metrics_url, before, at_close, received, prompt, cap)


async def _judge(
    control: httpx.AsyncClient,
    metrics_url: str,
    before: ServerCounters,
    at_close: ServerCounters,
    received: int,
    prompt: int | None,
    cap: int,
) -> CloseProbe:
    generated = at_close.generation_tokens - before.generation_tokens
    if _busy(at_close) == 0:  # gone before the close: the stream reached Folio late
        if generated >= cap:
            return CloseProbe(
                "NOT live",
                f"closing a stream does NOT stop the server's work: the server had generated "
                f"all {generated:.0f} tokens of the probe before Folio had read {received} "
                "(a proxy that buffers the stream?)",
                generated,
            )
        raise _Unverified(f"the probe ended on its own after {generated:.0f} tokens")
    _check_alone(before, at_close, prompt)
    previous: ServerCounters | None = None
    deadline = time.monotonic() + _SETTLE_S
    while time.monotonic() < deadline:
        await asyncio.sleep(_POLL_S)
        now = await _read(control, metrics_url)
        _check_alone(before, now, prompt)
        settled = previous is not None and now.generation_tokens == previous.generation_tokens
        previous = now
        if _busy(now) > 0 or not settled:
            continue
        total = now.generation_tokens - before.generation_tokens
        after = now.generation_tokens - at_close.generation_tokens
        if total >= cap:  # the close changed nothing: the request ran on to its cap
            return CloseProbe(
                "NOT live",
                f"closing a stream does NOT stop the server's work: the probe ran on to its "
                f"cap, {after:.0f} tokens after the close (read {received}; a proxy that "
                "ignores the client's close?)",
                total,
            )
        late = (
            f" (late: more than {CLOSE_SLACK}; a lagging front end?)" if after > CLOSE_SLACK else ""
        )
        return CloseProbe(
            "live",
            f"closing a stream stops the server's work: {total:.0f} tokens generated for the "
            f"probe, {received} read, {after:.0f} after the close{late}",
            total,
        )
    raise _Unverified(f"the probe's request did not leave the batch in {_SETTLE_S:.0f} s")


def _check_alone(before: ServerCounters, now: ServerCounters, prompt: int | None) -> None:
    """Raise when the counters show a request other than the probe."""
    if _busy(now) > 1:
        raise _Unverified(f"{_busy(now):.0f} requests beside the probe")
    if prompt is None or before.prompt_tokens is None or now.prompt_tokens is None:
        return
    if now.prompt_tokens - before.prompt_tokens > prompt:
        raise _Unverified("another request reached the server during the probe")


def _busy(counters: ServerCounters) -> float:
    if counters.running is None:
        raise _Unverified("the server publishes no vllm:num_requests_running")
    return counters.running + (counters.waiting or 0.0)


async def _read(control: httpx.AsyncClient, url: str) -> ServerCounters:
    try:
        return await read_counters_async(control, url)
    except ServerMetricsUnavailable as exc:
        raise _Unverified(str(exc)) from exc


async def _cap(control: httpx.AsyncClient, base_url: str, model: str) -> int:
    """PROBE_CAP, or less where the served model's context is shorter."""
    try:
        response = await control.get(base_url.rstrip("/") + "/models")
        served = {m.get("id"): m.get("max_model_len") for m in response.json().get("data") or []}
    except (httpx.HTTPError, ValueError, AttributeError):
        return PROBE_CAP
    context = served.get(model)
    return min(PROBE_CAP, int(context) - 128) if isinstance(context, int) else PROBE_CAP


def _body(model: str, cap: int) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": _PROMPT}],
        "max_tokens": cap,
        "temperature": 0,
        "ignore_eos": True,  # vLLM's: the request runs to its cap unless stopped
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }


async def _read_tokens(texts: Any) -> tuple[int, int | None]:
    """Read the stream until PROBE_READ tokens have arrived: (tokens read, prompt tokens)."""
    received, prompt, chunks = 0, None, 0
    lines = sse_lines(texts)
    async with aclosing(lines), aclosing(sse_chunks(lines)) as stream:
        async for chunk in stream:
            chunks += 1
            if usage := chunk.get("usage"):
                received = int(usage.get("completion_tokens") or 0)
                prompt = usage.get("prompt_tokens")
            else:
                received = chunks
            if received >= PROBE_READ:
                break
    return received, prompt


class CloseLiveness:
    """One endpoint's close probe: run before its first page, and again (at most every
    REPROBE_S, when this engine has no stream open) while it stays unverified."""

    REPROBE_S = 300.0

    def __init__(self) -> None:
        self.found: CloseProbe | None = None
        self._at = 0.0
        self._lock: asyncio.Lock | None = None

    def params(self) -> dict[str, str]:
        return self.found.params() if self.found else {}

    async def ensure(
        self, run: Callable[[], Awaitable[CloseProbe]], idle: bool
    ) -> CloseProbe | None:
        """The probe this call ran, if it ran one (its tokens go on this call's attempt)."""
        if not self._due(idle):
            return None
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:  # other page coroutines wait: no page runs beside the probe
            if not self._due(idle):
                return None
            self.found, self._at = await run(), time.monotonic()
            if self.found.verdict == "NOT live":
                logger.warning("%s (docs/loop-stop-gpu.md: proxies)", self.found.note)
            return self.found

    def _due(self, idle: bool) -> bool:
        if self.found is None:
            return True
        retry = idle and time.monotonic() - self._at >= self.REPROBE_S
        return self.found.verdict == "unverified" and retry
