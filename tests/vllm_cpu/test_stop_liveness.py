"""The start-up liveness probe: Folio relies on its vLLM plugin only where it is proven live.

The broken deployment is a real one: vLLM with speculative decoding drops entry-point logits
processors in the engine (v1/sample/logits_processor/__init__.py:208-216) while its API server
still validates their per-request args, so the plugin looks installed, accepts every request
and stops nothing: the silent no-op that async scheduling causes on a GPU, reproduced on the
CPU server. The probe must say so, and the engine must fall back to its client-side stops and
record that in the attempt.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from PIL import Image

from app.domain import AttemptStatus, PageInput
from app.engines.vlm import VlmEngine
from app.engines.vlm_stops import EndpointStops, probe_stops
from app.settings import PlanStep, VlmEndpoint
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint

pytestmark = pytest.mark.vllm

GREEDY_LOOP = PlanStep(name="greedy", engine="vlm", endpoint="x", temperature=0.0, max_tokens=600)


async def probe(server: VllmEndpoint) -> EndpointStops:
    async with httpx.AsyncClient(timeout=60) as client:
        return await probe_stops(client, server.base_url, SERVED_MODEL_NAME)


def test_the_probe_proves_the_plugin_live_on_a_sound_server(vllm_endpoint: VllmEndpoint) -> None:
    found = asyncio.run(probe(vllm_endpoint))

    assert found.plugin, found
    assert found.relied_on == "engine_plugin"
    assert found.probe_note is not None and "engine plugin live" in found.probe_note


def test_the_probe_catches_a_plugin_that_accepts_requests_and_stops_nothing(
    dev_speculative_endpoint: VllmEndpoint,
) -> None:
    # The server does accept the plugin's args (it validates them) ...
    refused = httpx.post(
        f"{dev_speculative_endpoint.base_url}/chat/completions",
        json={
            "model": SERVED_MODEL_NAME,
            "messages": [{"role": "user", "content": "x"}],
            "max_tokens": 1,
            "vllm_xargs": {"folio_loop_stop": "probe"},
        },
        timeout=60,
    )
    assert refused.status_code == 400 and "folio_loop_stop" in refused.text

    found = asyncio.run(probe(dev_speculative_endpoint))

    # ... but the requests the plugin should end run to their cap: not relied on.
    assert not found.plugin, found
    assert found.probe_note is not None and "NOT live" in found.probe_note
    assert "(length)" in found.probe_note


def test_the_engine_falls_back_to_client_stops_and_records_why(
    dev_speculative_endpoint: VllmEndpoint,
) -> None:
    endpoint = VlmEndpoint(
        base_url=dev_speculative_endpoint.base_url,
        model=SERVED_MODEL_NAME,
        transport_retry_s=5,
        server_repetition_detection=False,
        # The server's dev routes (shared with the abort tests) offer an abort call the engine
        # would rely on; a deployment without them is left with the client's close.
        abort_call=False,
    )
    engine = VlmEngine("speculative", endpoint)
    try:
        result = engine.transcribe(
            PageInput(Image.new("RGB", (400, 560), "white"), "", False), GREEDY_LOOP
        )
    finally:
        engine.close()

    assert result.status is AttemptStatus.DEGENERATE
    assert result.params["loop_stop"] == "client_close"
    assert "NOT live" in result.params["loop_stop_probe"]
    assert "vllm_xargs" not in result.params  # the blind plugin is not asked for
    assert result.stop_mechanism == "client_close"
