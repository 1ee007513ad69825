"""Reading a vLLM server's counters from its Prometheus /metrics page: the one HTTP seam here."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from functools import cache

import httpx
from prometheus_client.parser import text_string_to_metric_families

from app.errors import FolioError

GENERATED = "vllm:generation_tokens_total"
PROMPT = "vllm:prompt_tokens_total"
REQUESTS = "vllm:request_success_total"
STARTED = "process_start_time_seconds"
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
_READ = (GENERATED, PROMPT, REQUESTS, STARTED, RUNNING, WAITING)
# A vLLM server's /metrics is ~100 KB (a few models' histograms); a body far past that is not
# metrics, and is not read whole.
MAX_METRICS_BYTES = 16 * 2**20


class ServerMetricsUnavailable(FolioError):
    """The endpoint's metrics could not be read, or hold no token counters."""

    category = "server_metrics"


@dataclass(frozen=True)
class ServerCounters:
    """Counters since the server started; `started` (a Unix time) identifies the instance."""

    generation_tokens: float
    prompt_tokens: float | None
    requests: float | None
    started: float | None
    running: float | None = None  # requests in the engine's batch now (a gauge)
    waiting: float | None = None  # requests queued for it (a gauge)


def parse_counters(text: str) -> ServerCounters:
    """The token and request counters and the batch gauges of a Prometheus text page, summed
    over labels (engines, models, finish reasons)."""
    totals: dict[str, float] = {}
    # vLLM's page is mostly histograms (~1,400 lines, 127 KiB): parsing only the lines read
    # takes 0.35 ms of CPU instead of 24, and the workers read it after every page
    read = "\n".join(line for line in text.splitlines() if line.startswith(_READ))
    for family in text_string_to_metric_families(read + "\n"):
        for sample in family.samples:
            if sample.name in _READ:
                totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    if GENERATED not in totals:
        raise ServerMetricsUnavailable(f"no {GENERATED} counter (not a vLLM server?)")
    return ServerCounters(
        totals[GENERATED],
        totals.get(PROMPT),
        totals.get(REQUESTS),
        totals.get(STARTED),
        totals.get(RUNNING),
        totals.get(WAITING),
    )


async def read_counters_async(
    client: httpx.AsyncClient, url: str, timeout_s: float = 5.0
) -> ServerCounters:
    """The counters at `url`, read on an asynchronous client."""
    try:
        async with client.stream("GET", url, timeout=timeout_s) as response:
            response.raise_for_status()
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                _check_size(url, len(body))
    except httpx.HTTPError as exc:
        raise ServerMetricsUnavailable(f"{url}: {type(exc).__name__}: {exc}") from exc
    return _counters_of(url, body.decode("utf-8", "replace"))


@cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default context, made once: making it loads the CA bundle, ~21 ms of CPU, which
    a reading after every page paid each time (`python -m bench scale`)."""
    return httpx.create_ssl_context()


def read_counters(url: str, timeout_s: float = 5.0) -> ServerCounters:
    """The counters at `url` (a /metrics address)."""
    try:
        with httpx.stream("GET", url, timeout=timeout_s, verify=_tls_context()) as response:
            response.raise_for_status()
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                _check_size(url, len(body))
    except httpx.HTTPError as exc:
        raise ServerMetricsUnavailable(f"{url}: {type(exc).__name__}: {exc}") from exc
    return _counters_of(url, body.decode("utf-8", "replace"))


def _check_size(url: str, read: int) -> None:
    """A /metrics page is another server's body: read up to a cap, then refused and closed."""
    if read > MAX_METRICS_BYTES:
        raise ServerMetricsUnavailable(f"{url}: metrics over {MAX_METRICS_BYTES >> 20} MiB")


def _counters_of(url: str, text: str) -> ServerCounters:
    try:
        return parse_counters(text)
    except ValueError as exc:
        raise ServerMetricsUnavailable(f"{url}: unreadable metrics: {exc}") from exc
