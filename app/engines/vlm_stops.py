"""Which loop stops an endpoint offers, found by probing it once, and which one ended an attempt.

Stops, from the one that owes nothing to the server's front end to the one that owes it all:
- `engine_plugin`: Folio's vLLM plugin (app/vllm_plugin) runs the detector inside the engine
  step and ends the request there; asked per request with `vllm_xargs`.
- `server_repetition`: vLLM's `repetition_detection` (>= 0.17), exact token repeats only.
- `abort_call`: `POST /abort_requests` with the request id, sent when Folio's client-side
  detector fires (vLLM with VLLM_SERVER_DEV_MODE=1 or --tokens-only; never behind the API key).
- `client_close`: closing the stream, always available; the server stops when its API server
  notices the closed socket.
Probes never assume: each sends one request a server without the feature answers otherwise.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from app.vllm_plugin.behaviours import LOOP_STOP_ARG

StopMechanism = Literal["engine_plugin", "abort_call", "server_repetition", "client_close", "none"]
Switch = bool | Literal["auto"]

REPETITION_DETECTION = {"max_pattern_size": 16, "min_count": 4}
# Abort routes, api-key guarded first: vLLM 0.32 serves /inference/v1/abort_requests with
# --enable-scale-out (403 otherwise), /abort_requests with --tokens-only or VLLM_SERVER_DEV_MODE=1.
ABORT_PATHS = ("/inference/v1/abort_requests", "/abort_requests")


@dataclass(frozen=True)
class EndpointStops:
    """The stops Folio uses on one endpoint."""

    plugin: bool = False
    abort_path: str | None = None  # relative to the server root
    repetition_detection: bool = False

    @property
    def is_vllm(self) -> bool:
        return self.plugin or self.repetition_detection or self.abort_path is not None


def root_url(base_url: str) -> str:
    return base_url.rstrip("/").removesuffix("/v1")


async def probe_stops(client: httpx.AsyncClient, base_url: str, model: str) -> EndpointStops:
    """What the server at `base_url` offers (a few 1-token requests, once per endpoint)."""
    url = base_url.rstrip("/") + "/chat/completions"
    probe: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": "probe"}],
        "max_tokens": 1,
    }
    # A bad value is refused (400, naming the field) only where the field is understood:
    # vLLM 0.32 answers an unknown field with 200 and ignores it.
    plugin = await _refuses(client, url, probe | {"vllm_xargs": {LOOP_STOP_ARG: "probe"}})
    repetition = await _refuses(
        client, url, probe | {"repetition_detection": {"max_pattern_size": "probe"}}
    )
    return EndpointStops(plugin, await _abort_path(client, base_url), repetition)


async def _refuses(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> bool:
    """Raises httpx.TransportError when the server cannot be reached: probe again later."""
    field = next(k for k in body if k not in ("model", "messages", "max_tokens"))
    name = LOOP_STOP_ARG if field == "vllm_xargs" else field
    response = await client.post(url, json=body)
    return response.status_code == 400 and name in response.text


async def _abort_path(client: httpx.AsyncClient, base_url: str) -> str | None:
    # Never an empty list: vLLM's dev route aborts every request then.
    body = {"request_ids": [f"folio-probe-{uuid.uuid4().hex}"]}
    for path in ABORT_PATHS:
        response = await client.post(root_url(base_url) + path, json=body)
        if response.status_code == 200:
            return path
    return None


def choose_stops(found: EndpointStops, plugin: Switch, abort: Switch, rep: Switch) -> EndpointStops:
    """The probe's findings, overridden by settings (True/False force a stop on or off).

    `repetition_detection` on auto is the fallback for a server without Folio's plugin: beside
    the plugin it adds no loop the plugin misses often enough to pay for the healthy pages it
    stops (table rules and leader dots are exact short token repeats: 2 of 57 healthy pages in
    the benchmark's scripted run)."""
    use_plugin = found.plugin if plugin == "auto" else plugin
    return EndpointStops(
        plugin=use_plugin,
        abort_path=(found.abort_path or ABORT_PATHS[-1])
        if abort is True
        else (found.abort_path if abort == "auto" else None),
        repetition_detection=(found.repetition_detection and not use_plugin)
        if rep == "auto"
        else rep,
    )


async def send_abort(client: httpx.AsyncClient, base_url: str, path: str, request_id: str) -> bool:
    """Ask the server to abort `request_id`; True when it accepted the call."""
    try:
        response = await client.post(
            root_url(base_url) + path, json={"request_ids": [request_id]}, timeout=10.0
        )
    except httpx.HTTPError:
        return False
    return response.status_code == 200


@dataclass(frozen=True)
class StopRecord:
    mechanism: StopMechanism
    tokens_after_verdict: int | None = None
    note: str | None = None  # why tokens_after_verdict is unknown


def stop_record(
    *,
    verdict: bool,
    finish_reason: str | None,
    stops: EndpointStops,
    abort_sent: bool,
    final_tokens: int | None,
    tokens_at_verdict: int | None,
) -> StopRecord:
    """Which stop ended an attempt, and what the server generated after Folio's verdict."""
    if not verdict:
        if finish_reason == "repetition":
            return StopRecord("server_repetition", None, "server stopped; Folio saw no loop")
        return StopRecord("none")
    if finish_reason == "repetition":
        mechanism: StopMechanism = "server_repetition"
    elif finish_reason == "stop" and stops.plugin:
        mechanism = "engine_plugin"
    elif finish_reason == "abort" and abort_sent:
        mechanism = "abort_call"
    else:
        return StopRecord("client_close", None, "stream closed: the server's count is not sent")
    if final_tokens is None or tokens_at_verdict is None:
        return StopRecord(mechanism, None, "no token counts in the stream")
    return StopRecord(mechanism, max(0, final_tokens - tokens_at_verdict))
