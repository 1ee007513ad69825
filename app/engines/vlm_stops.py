"""Which loop stops an endpoint offers, found by probing it once, and which one ended an attempt.

Stops, from the one that owes nothing to the server's front end to the one that owes it all:
- `engine_plugin`: Folio's vLLM plugin (app/vllm_plugin) runs the detector inside the engine
  step and ends the request there; asked per request with `vllm_xargs`.
- `server_repetition`: vLLM's `repetition_detection` (>= 0.17), exact token repeats only.
- `abort_call`: `POST /abort_requests` with the request id, sent when Folio's client-side
  detector fires (vLLM with VLLM_SERVER_DEV_MODE=1 or --tokens-only; never behind the API key).
- `client_close`: closing the stream, always available; the server stops when its API server
  notices the closed socket.
Probes never assume: each sends one request a server without the feature answers otherwise,
and the plugin is relied on only once a request it must end early has ended early (it can be
installed and accept requests yet see nothing: docs/loop-stop-gpu.md). Which stop each attempt
relied on, and what the probe found, go into the attempt's params (`loop_stop`,
`loop_stop_probe`), which `folio status` shows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any, Literal

import httpx

from app.vllm_plugin.behaviours import LOOP_STOP_ARG, STOP_AFTER_ARG

StopMechanism = Literal["engine_plugin", "abort_call", "server_repetition", "client_close", "none"]
Switch = bool | Literal["auto"]

REPETITION_DETECTION = {"max_pattern_size": 16, "min_count": 4}
# Abort routes, api-key guarded first: vLLM 0.32 serves /inference/v1/abort_requests with
# --enable-scale-out (403 otherwise), /abort_requests with --tokens-only or VLLM_SERVER_DEV_MODE=1.
ABORT_PATHS = ("/inference/v1/abort_requests", "/abort_requests")
# The liveness probe asks the plugin to end greedy requests after each of these many tokens,
# under a cap it would otherwise run to. Two lengths: a model's own EOS cannot land on both.
LIVENESS_LENGTHS = (3, 5)
LIVENESS_CAP = 24
# Tokens over N a live plugin may let through: the EOS it forces, and one step of lag where
# vLLM hands it the real ids a step late (async scheduling, gpu_input_batch.py:1038-1081).
LIVENESS_SLACK = 2


@dataclass(frozen=True)
class EndpointStops:
    """The stops Folio uses on one endpoint."""

    plugin: bool = False
    abort_path: str | None = None  # relative to the server root
    repetition_detection: bool = False
    probe_note: str | None = None  # what the liveness probe found, when it ran

    def without_loop_stops(self) -> EndpointStops:
        """These stops less those that end loops (the abort call stays: cancels use it)."""
        return replace(self, plugin=False, repetition_detection=False)

    @property
    def is_vllm(self) -> bool:
        return self.plugin or self.repetition_detection or self.abort_path is not None

    @property
    def relied_on(self) -> StopMechanism:
        """The stop a loop on this endpoint is expected to end by."""
        if self.plugin:
            return "engine_plugin"
        if self.repetition_detection:
            return "server_repetition"
        return "abort_call" if self.abort_path else "client_close"


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
    note = None
    if plugin:
        plugin, note = await probe_plugin_live(client, url, model)
    repetition = await _refuses(
        client, url, probe | {"repetition_detection": {"max_pattern_size": "probe"}}
    )
    return EndpointStops(plugin, await _abort_path(client, base_url), repetition, note)


async def probe_plugin_live(client: httpx.AsyncClient, url: str, model: str) -> tuple[bool, str]:
    """Whether the installed plugin sees real token ids and ends requests: greedy requests
    asking it to end after N tokens must end there (finish "stop"), for each N."""
    counts: list[str] = []
    live = True
    for n in LIVENESS_LENGTHS:
        body = {
            "model": model,
            "messages": [{"role": "user", "content": "Count from 1 to 100, one number a line."}],
            "max_tokens": LIVENESS_CAP,
            "temperature": 0,
            "vllm_xargs": {STOP_AFTER_ARG: n},
        }
        response = await client.post(url, json=body)
        if response.status_code != 200:
            return False, f"plugin probe refused ({response.status_code}): {response.text[:200]}"
        answer = response.json()
        finish = answer["choices"][0].get("finish_reason")
        tokens = int((answer.get("usage") or {}).get("completion_tokens") or 0)
        counts.append(f"{n}->{tokens} ({finish})")
        live = live and finish == "stop" and n < tokens <= n + LIVENESS_SLACK
    verdict = "live" if live else "installed but NOT live: client-side stops used"
    return live, f"engine plugin {verdict}; asked to end after N tokens: {', '.join(counts)}"


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
        probe_note=found.probe_note,
    )


def loop_stop_params(stops: EndpointStops) -> dict[str, str]:
    """What an attempt records about the stop it relied on (kept in its params)."""
    found: dict[str, str] = {"loop_stop": stops.relied_on}
    if stops.probe_note:
        found["loop_stop_probe"] = stops.probe_note
    return found


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
