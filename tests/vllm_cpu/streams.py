"""A busy batch of looping streams, each stopped early, and what the server generated after.

Greedy decoding on the tiny model loops from its first tokens, so `streams` concurrent
greedy requests are a batch of real loops. Each stream is read until it has `stop_after`
completion tokens (continuous usage stats count them), then `stop` ends it (by default the
client closes the stream); the server's `vllm:generation_tokens_total` then tells how many
tokens were generated beyond those the client had when it stopped.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx

from tests.vllm_cpu.server import VllmEndpoint, metric_total

# Tokens a server may generate after a stream's stop (a client's close, a cancel), per stream, at
# most: the chunks and engine steps in flight, the close, and the server noticing it.
FEW_TOKENS = 16
_USAGE = re.compile(rb'"completion_tokens":(\d+)')

# (stream index, its request id, the open response): called when a stream reaches stop_after.
# Returns True to read the stream on to its end (the server stops it), else it is closed.
StopHook = Callable[[int, str, httpx.Response], bool]


@dataclass
class StreamResult:
    request_id: str
    tokens_at_stop: int = 0  # completion tokens the client had when it stopped the stream
    finish_reason: str | None = None  # set when the server ended the stream itself
    tokens_at_finish: int | None = None
    # Completion tokens the server had already sent when the client stopped: the latest usage
    # count in the bytes waiting unread in the client's socket (a lower bound: httpx holds up
    # to 64 KiB more). What the server generated up to there was generated before the stop.
    tokens_sent_at_stop: int | None = None


@dataclass
class BatchRun:
    streams: list[StreamResult] = field(default_factory=list)
    generated: int = 0  # growth of vllm:generation_tokens_total over the run

    @property
    def tokens_at_stop(self) -> int:
        return sum(s.tokens_at_stop for s in self.streams)

    @property
    def after_stop(self) -> int:
        """Tokens the server generated after it had sent what the client held at its stop
        (all streams): what the stop let through, whatever the reader's lag."""
        return self.generated - sum(s.tokens_sent_at_stop or s.tokens_at_stop for s in self.streams)

    @property
    def overshoot(self) -> int:
        """Tokens the server generated beyond those the client had read when it stopped
        (all streams): after the stop, plus any already sent that the client had not read."""
        return self.generated - self.tokens_at_stop

    def describe(self, server_log: str | None = None) -> str:
        """One line per stream, to tell a late stop from a reader that lagged the server."""
        lines = []
        for s in self.streams:
            aborted = (
                "log n/a"
                if server_log is None
                else ("aborted" if _aborted_in_log(server_log, s.request_id) else "NOT aborted")
            )
            lines.append(
                f"{s.request_id}: read {s.tokens_at_stop} at the stop, server had sent "
                f">= {s.tokens_sent_at_stop}, finish {s.finish_reason} at "
                f"{s.tokens_at_finish}, {aborted}"
            )
        return "\n".join(lines)


def _aborted_in_log(log: str, request_id: str) -> bool:
    """vLLM logs `Aborted request(s) <internal id>` (chatcmpl-<X-Request-Id>-<suffix>)."""
    return (
        re.search(rf"Aborted request\(s\) [^\n]*chatcmpl-{re.escape(request_id)}\b", log)
        is not None
    )


def tokens_sent(response: httpx.Response, read: int) -> int:
    """The latest completion-token count among the bytes waiting unread in the response's
    socket (without consuming them), or `read` when there are none or no socket to look at."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if not isinstance(sock, socket.socket):
        return read
    with contextlib.suppress(OSError):
        waiting = sock.recv(1 << 24, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        counts = _USAGE.findall(waiting)
        return max([read, *(int(c) for c in counts)])
    return read


def sse_chunks(response: httpx.Response) -> Iterator[dict]:
    for line in response.iter_lines():
        if line == "data: [DONE]":
            return
        if line.startswith("data: "):
            yield json.loads(line.removeprefix("data: "))


def looping_body(endpoint: VllmEndpoint, index: int, max_tokens: int, **extra: object) -> dict:
    return {
        "model": endpoint.model,
        # "page 0" makes the tiny model emit EOS after 341 tokens; pages 1-8 loop to the cap.
        "messages": [{"role": "user", "content": f"Transcribe page {index + 1}."}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        **extra,
    }


def close_stream(index: int, request_id: str, response: httpx.Response) -> bool:
    response.close()
    return False


def wait_until_stable(read: Callable[[], float], hold: float = 2.0, limit: float = 90.0) -> float:
    """Poll until the value has not changed for `hold` seconds; return it."""
    value, since, deadline = read(), time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(0.5)
        current = read()
        if current != value:
            value, since = current, time.monotonic()
        elif time.monotonic() - since >= hold:
            return value
    raise AssertionError(f"value still changing after {limit} s (last {value})")


def _run_stream(
    endpoint: VllmEndpoint,
    body: dict,
    result: StreamResult,
    stop_after: int,
    stop: StopHook,
    index: int,
) -> None:
    headers = {"X-Request-Id": result.request_id}
    with (
        httpx.Client(timeout=300) as client,
        client.stream(
            "POST", f"{endpoint.base_url}/chat/completions", json=body, headers=headers
        ) as response,
    ):
        response.raise_for_status()
        cap = int(body.get("max_tokens") or 0)
        for chunk, received in _chunks_with_received(response):
            tokens = (chunk.get("usage") or {}).get("completion_tokens", 0)
            finish = chunk["choices"][0].get("finish_reason") if chunk["choices"] else None
            if finish:
                result.finish_reason, result.tokens_at_finish = finish, tokens
            # Decided on what has arrived, not on what has been parsed: a reader that parses
            # behind the server by the whole loop would stop a request that has ended already.
            # A stream whose bytes show the cap has ended: read on, its finish tells.
            if received >= stop_after and not result.tokens_at_stop and not finish:
                if cap and received >= cap:
                    continue
                result.tokens_at_stop = received
                result.tokens_sent_at_stop = max(received, tokens_sent(response, received))
                if not stop(index, result.request_id, response):
                    return
        if not result.tokens_at_stop:
            result.tokens_at_stop = result.tokens_at_finish or 0


def _chunks_with_received(response: httpx.Response) -> Iterator[tuple[dict, int]]:
    """Each SSE chunk, with the latest completion-token count among all bytes received so far
    (a network read holds up to 64 KiB, hundreds of chunks the reader has not reached yet)."""
    pending, received = b"", 0
    for block in response.iter_raw():
        counts = _USAGE.findall(block)
        received = max([received, *(int(c) for c in counts)])
        *lines, pending = (pending + block).split(b"\n")
        for line in lines:
            if line.strip() == b"data: [DONE]":
                return
            if line.startswith(b"data: "):
                yield json.loads(line[6:]), received


def run_looping_batch(
    endpoint: VllmEndpoint,
    *,
    streams: int = 8,
    max_tokens: int = 2000,
    stop_after: int = 256,
    stop: StopHook = close_stream,
    tag: str = "batch",
    **extra: object,
) -> BatchRun:
    """Run `streams` looping requests at once, each stopped after `stop_after` tokens."""
    before = wait_until_stable(endpoint.generation_tokens_total, hold=1.0)
    run = BatchRun([StreamResult(f"{tag}-{time.monotonic_ns()}-{i}") for i in range(streams)])
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            body = looping_body(endpoint, index, max_tokens, **extra)
            _run_stream(endpoint, body, run.streams[index], stop_after, stop, index)
        except BaseException as error:  # re-raised in the caller's thread
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(streams)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    run.generated = int(wait_until_stable(endpoint.generation_tokens_total) - before)
    running = metric_total(endpoint.metrics(), "vllm:num_requests_running")
    assert running == 0, f"{running} requests still running after the batch"
    return run


@dataclass
class WatchedStream:
    """A stream read to its end while Folio's detector watches its text, as the engine does."""

    finish_reason: str | None = None
    completion_tokens: int = 0
    tokens_at_verdict: int | None = None  # completion tokens when the detector called a loop


def watch_stream(endpoint: VllmEndpoint, body: dict) -> WatchedStream:
    from app.degeneration import LoopDetector  # pure, stdlib only

    detector, watched = LoopDetector(), WatchedStream()
    with httpx.stream(
        "POST", f"{endpoint.base_url}/chat/completions", json=body, timeout=300
    ) as response:
        response.raise_for_status()
        for chunk in sse_chunks(response):
            watched.completion_tokens = (chunk.get("usage") or {}).get(
                "completion_tokens", watched.completion_tokens
            )
            for choice in chunk["choices"]:
                piece = choice["delta"].get("content") or ""
                if watched.tokens_at_verdict is None and piece and detector.feed(piece):
                    watched.tokens_at_verdict = watched.completion_tokens
                watched.finish_reason = choice.get("finish_reason") or watched.finish_reason
    return watched


def run_concurrently(jobs: list[Callable[[], object]]) -> list[object]:
    """Run each job on its own thread; their results in order (the first error re-raised)."""
    results: list[object] = [None] * len(jobs)
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            results[index] = jobs[index]()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results
