"""Facts about the real vLLM CPU server that the rest of Folio relies on.

Each test talks plain HTTP (httpx) to a server on the tiny random Qwen2-VL model, whose
greedy output degenerates into loops: a real degeneration source.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from app.db.engine import Database
from app.db.models import Attempt, Page
from app.pdf import samples
from tests.test_vlm_engine import run_vlm_job
from tests.vllm_cpu.images import page_image_data_url
from tests.vllm_cpu.server import VllmEndpoint, VllmServer, metric_total

pytestmark = pytest.mark.vllm

# A block of 1-64 characters repeated at least 3 times in a row (the tiny model's tokens
# run to 3-30 characters, so one looping token cycle spans tens of characters).
MARK = "folio test server:"  # what server_site/sitecustomize.py logs
_REPEATED_BLOCK = re.compile(r"(.{1,64}?)\1{2,}", re.S)


def loop_coverage(text: str, window: int = 200) -> float:
    """Share of the last `window` characters that lie in runs of a repeated block.

    Greedy output on the tiny model scores about 0.8 (its loop pattern drifts now and
    then as the context grows); sampled output with a repetition penalty 0.0-0.04.
    """
    tail = text[-window:]
    covered = sum(len(m.group(0)) for m in _REPEATED_BLOCK.finditer(tail))
    return covered / max(len(tail), 1)


def chat_body(endpoint: VllmEndpoint, max_tokens: int, **params: object) -> dict:
    content = [
        {"type": "image_url", "image_url": {"url": page_image_data_url()}},
        {"type": "text", "text": "Transcribe the text on this page."},
    ]
    return {
        "model": endpoint.model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        **params,
    }


def sse_chunks(response: httpx.Response) -> Iterator[dict]:
    for line in response.iter_lines():
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            return
        yield json.loads(line.removeprefix("data: "))


def complete(endpoint: VllmEndpoint, body: dict) -> dict:
    response = httpx.post(f"{endpoint.base_url}/chat/completions", json=body, timeout=120)
    response.raise_for_status()
    return response.json()


def test_streaming_chat_with_page_image_reports_usage(vllm_endpoint: VllmEndpoint) -> None:
    body = chat_body(
        vllm_endpoint,
        max_tokens=64,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    with httpx.stream(
        "POST", f"{vllm_endpoint.base_url}/chat/completions", json=body, timeout=120
    ) as response:
        assert response.status_code == 200, response.read()
        chunks = list(sse_chunks(response))

    deltas = [c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]]
    finish = [c["choices"][0].get("finish_reason") for c in chunks if c["choices"]]
    usage = chunks[-1]["usage"]
    assert len([d for d in deltas if d]) > 10
    assert finish[-1] == "length"
    assert chunks[-1]["choices"] == []  # the usage chunk comes last, on its own
    assert usage["completion_tokens"] == 64
    # A full page must stay cheap: max_pixels caps it at 64 merged patches.
    assert usage["prompt_tokens"] < 100


def test_greedy_output_loops_deterministically(vllm_endpoint: VllmEndpoint) -> None:
    body = chat_body(vllm_endpoint, max_tokens=300, temperature=0)
    first = complete(vllm_endpoint, body)["choices"][0]["message"]["content"]
    second = complete(vllm_endpoint, body)["choices"][0]["message"]["content"]

    assert first == second
    assert loop_coverage(first) >= 0.5, repr(first[-200:])


def test_repetition_detection_ends_request_with_repetition(vllm_endpoint: VllmEndpoint) -> None:
    body = chat_body(
        vllm_endpoint,
        max_tokens=500,
        temperature=0,
        repetition_detection={"max_pattern_size": 8, "min_count": 4},
    )
    result = complete(vllm_endpoint, body)

    assert result["choices"][0]["finish_reason"] == "repetition"
    assert result["usage"]["completion_tokens"] < 100


def test_repetition_penalty_with_sampling_does_not_loop(vllm_endpoint: VllmEndpoint) -> None:
    body = chat_body(vllm_endpoint, max_tokens=300, temperature=0.8, seed=1, repetition_penalty=1.3)
    result = complete(vllm_endpoint, body)
    text = result["choices"][0]["message"]["content"]

    assert result["choices"][0]["finish_reason"] == "length"
    assert loop_coverage(text) < 0.2, repr(text[-200:])


def test_the_test_servers_engine_is_forked_and_spins_less(vllm_endpoint: VllmEndpoint) -> None:
    """server_site/sitecustomize.py took effect: vLLM's CPU platform chose `spawn`, the server
    forked its engine core and model worker instead, with one OpenMP thread in every process,
    and the engine's queue readers spin 0.1 s (a vLLM the patches no longer fit logs
    `unchanged`)."""
    server = vllm_endpoint.server
    if server is None:
        pytest.skip("the session's server was started elsewhere (FOLIO_VLLM_URL)")
    marks = [line.split(MARK, 1)[1] for line in server.log_text().splitlines() if MARK in line]
    started = " engine core and model worker start method fork (vLLM's CPU platform set spawn)"
    assert [m for m in marks if m.startswith(started + ", OMP_NUM_THREADS 1 (was ")], marks
    assert " queue readers spin 0.1 s" in marks, marks
    assert not [m for m in marks if "unchanged" in m], marks
    engine = server.engine_pids()
    assert len(engine) >= 2, "the engine core and its model worker"
    # the forked worker bound itself to the cores vLLM chose for it, as a spawned one is bound
    bound = [m for m in marks if m.startswith(" model worker bound to cores ")]
    assert bound, marks
    cores = set(json.loads(bound[-1].split(" cores ", 1)[1]))
    assert cores in [os.sched_getaffinity(pid) for pid in engine], (bound, engine)


def wait_for_a_running_request(server: VllmServer, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while metric_total(server.metrics(), "vllm:num_requests_running") < 1:
        assert time.monotonic() < deadline, "no request reached the server"
        time.sleep(0.05)


def test_killed_server_breaks_requests_in_flight_and_folios_pages_wait_for_its_restart(
    vllm_endpoint: VllmEndpoint, sqlite_url: str, tmp_path: Path
) -> None:
    """Runs last of the session server's tests (this file is last of their group): it kills
    the session's server and starts it again on the same port. One kill serves both sides: a
    plain client's request in flight breaks, and Folio's pages in flight wait and complete."""
    server = vllm_endpoint.server
    if server is None:
        pytest.skip("FOLIO_VLLM_URL server: not ours to kill")
    port = server.port
    (tmp_path / "many.pdf").write_bytes(
        samples.scanned_pdf([samples.page_text(n % 6) for n in range(12)])
    )
    outcome: dict[str, str] = {}
    job = threading.Thread(
        target=lambda: outcome.setdefault(
            "job", run_vlm_job(server.base_url, sqlite_url, tmp_path, retry_s=300)
        )
    )
    job.start()
    try:
        # killed while the engine decodes a page (not after a wait the pages might all finish in)
        wait_for_a_running_request(server)
        # Timing alone cannot put the kill mid-request for the plain client: a starved API
        # process may only see a 1500-token request once the engine has finished it. A frozen
        # engine holds it, and Folio's page, in flight.
        server.freeze_engine()
        body = chat_body(vllm_endpoint, max_tokens=1500, temperature=0, stream=True)
        crash = threading.Timer(2.0, server.kill)
        crash.start()
        try:
            with (
                pytest.raises(httpx.TransportError) as broken,
                httpx.stream(
                    "POST", f"{server.base_url}/chat/completions", json=body, timeout=60
                ) as resp,
            ):
                for _ in sse_chunks(resp):
                    pass
        finally:
            crash.join()
        assert not isinstance(broken.value, httpx.TimeoutException)  # cut off, not timed out
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{server.root_url}/health", timeout=5)
    finally:
        if not server.is_running():
            server.restart()  # down for its start-up; the pages' transport retries cover any length

    assert server.port == port
    result = complete(vllm_endpoint, chat_body(vllm_endpoint, max_tokens=5, temperature=0))
    assert result["usage"]["completion_tokens"] == 5
    job.join(timeout=400)
    assert "job" in outcome, "the job did not finish after the server came back"
    with Database(sqlite_url).session() as session:
        pages = session.scalars(select(Page)).all()
        attempts = session.scalars(select(Attempt)).all()
    assert len(pages) == 12 and all(p.status == "fallback" for p in pages)
    assert not [a for a in attempts if a.status == "transport_error"]
    assert any(a.params.get("transport_retries") for a in attempts)
