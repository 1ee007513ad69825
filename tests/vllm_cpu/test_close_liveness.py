"""The close-liveness probe on the real vLLM CPU server: "live" straight to the server and
through a proxy that passes the close on, "NOT live" through a proxy that holds the upstream
stream open after its client leaves (nginx with `proxy_ignore_client_abort on`), "unverified"
beside other traffic; and the engine records the verdict on its attempts.

The proxies run as processes of their own (tests/http_proxies.py). Every wait is on the
server's counters, with generous caps, never on a clock. The probe's cap here is the least it
accepts (4 x CLOSE_SLACK), not the test server's context: a close that is NOT live runs the
probe to its cap, three times in this module (1,920 tokens each took 15-21 s of the CI run).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from app.domain import PageInput
from app.engines import vlm_close_probe
from app.engines.vlm import VlmEngine
from app.engines.vlm_close_probe import CLOSE_SLACK, CloseProbe, probe_close
from app.settings import PlanStep, VlmEndpoint
from tests.http_proxies import ProxyProcess
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint, metric_total

pytestmark = pytest.mark.vllm

PROBE_CAP = 4 * CLOSE_SLACK  # under the test server's context (2,048 less 128)
GREEDY = PlanStep(name="greedy", engine="vlm", endpoint="x", temperature=0.0, max_tokens=200)


@pytest.fixture(autouse=True)
def short_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vlm_close_probe, "PROBE_CAP", PROBE_CAP)


def running(server: VllmEndpoint) -> float:
    samples = server.metrics()
    return metric_total(samples, "vllm:num_requests_running") + metric_total(
        samples, "vllm:num_requests_waiting"
    )


def wait_idle(server: VllmEndpoint, cap_s: float = 300.0) -> None:
    """Until the server runs no request (a held probe runs on to its cap first)."""
    deadline = time.monotonic() + cap_s
    while running(server) > 0:
        assert time.monotonic() < deadline, "the server never went idle"
        time.sleep(0.2)


def probe(server: VllmEndpoint, base_url: str) -> CloseProbe:
    async def run() -> CloseProbe:
        async with httpx.AsyncClient(timeout=60) as control:
            return await probe_close(
                control, base_url, SERVED_MODEL_NAME, f"{server.root_url}/metrics"
            )

    wait_idle(server)
    return asyncio.run(run())


@pytest.fixture
def proxies(vllm_endpoint: VllmEndpoint, tmp_path: Path) -> Iterator[dict[str, str]]:
    upstream = vllm_endpoint.root_url.removeprefix("http://")
    with (
        ProxyProcess("pass", tmp_path, upstream=upstream) as passing,
        ProxyProcess("hold", tmp_path, upstream=upstream) as holding,
        ProxyProcess("buffer", tmp_path, upstream=upstream) as buffering,
    ):
        yield {
            "pass": f"{passing.url}/v1",
            "hold": f"{holding.url}/v1",
            "buffer": f"{buffering.url}/v1",
        }
    wait_idle(vllm_endpoint)


def test_a_close_straight_to_vllm_is_live(vllm_endpoint: VllmEndpoint) -> None:
    found = probe(vllm_endpoint, vllm_endpoint.base_url)
    assert found.verdict == "live", found


def test_a_proxy_that_passes_the_close_on_is_live(
    vllm_endpoint: VllmEndpoint, proxies: dict[str, str]
) -> None:
    found = probe(vllm_endpoint, proxies["pass"])
    assert found.verdict == "live", found


def test_a_proxy_that_holds_the_upstream_stream_is_caught(
    vllm_endpoint: VllmEndpoint, proxies: dict[str, str]
) -> None:
    before = vllm_endpoint.generation_tokens_total()
    found = probe(vllm_endpoint, proxies["hold"])
    wait_idle(vllm_endpoint)
    ran_on = vllm_endpoint.generation_tokens_total() - before

    assert found.verdict == "NOT live", found
    assert "does NOT stop" in found.note
    # The server's own count: the held request ran on past the close, to its cap.
    assert ran_on >= PROBE_CAP, ran_on


def test_a_proxy_that_buffers_the_whole_reply_is_caught(
    vllm_endpoint: VllmEndpoint, proxies: dict[str, str]
) -> None:
    found = probe(vllm_endpoint, proxies["buffer"])
    assert found.verdict == "NOT live", found
    assert "before Folio had read" in found.note


def test_other_traffic_leaves_it_unverified(vllm_endpoint: VllmEndpoint) -> None:
    body = {
        "model": SERVED_MODEL_NAME,
        "messages": [{"role": "user", "content": "Count on and on."}],
        "max_tokens": 1900,
        "ignore_eos": True,
        "stream": True,
    }
    url = f"{vllm_endpoint.base_url}/chat/completions"

    async def run() -> CloseProbe:
        async with httpx.AsyncClient(timeout=60) as control:
            metrics = f"{vllm_endpoint.root_url}/metrics"
            return await probe_close(control, vllm_endpoint.base_url, SERVED_MODEL_NAME, metrics)

    wait_idle(vllm_endpoint)
    with httpx.Client(timeout=60) as client, client.stream("POST", url, json=body) as other:
        lines = other.iter_lines()
        for _ in range(8):  # the other request is in the batch
            next(lines)
        found = asyncio.run(run())
    assert found.verdict == "unverified", found
    assert "busy" in found.note


@pytest.mark.parametrize(("path", "verdict"), [("direct", "live"), ("hold", "NOT live")])
def test_the_engine_records_the_close_probe_on_its_attempts(
    vllm_endpoint: VllmEndpoint, proxies: dict[str, str], path: str, verdict: str
) -> None:
    endpoint = VlmEndpoint(
        base_url=vllm_endpoint.base_url if path == "direct" else proxies[path],
        model=SERVED_MODEL_NAME,
        metrics_url=f"{vllm_endpoint.root_url}/metrics",
        engine_plugin=False,  # as compose deploys it: the close is the stop
        abort_call=False,
        server_repetition_detection=False,
        transport_retry_s=5,
        max_image_side=224,
    )
    engine = VlmEngine("probed", endpoint)
    page = PageInput(Image.new("RGB", (400, 560), "white"), "", False)
    wait_idle(vllm_endpoint)
    try:
        first = engine.transcribe(page, GREEDY)
        second = engine.transcribe(page, GREEDY)
    finally:
        engine.close()

    assert first.params["loop_stop"] == "client_close"
    assert first.params["loop_stop_close"] == verdict, first.params
    assert second.params["loop_stop_close"] == verdict  # probed once, recorded on every attempt
    # The probe's server tokens go on the attempt whose call ran it, once: a live close stops
    # it short of its cap, a dead one does not.
    probe_tokens = int(str(first.params["loop_stop_close_tokens"]))
    assert probe_tokens >= 16 and (verdict == "live") == (probe_tokens < PROBE_CAP)
    assert "loop_stop_close_tokens" not in second.params
