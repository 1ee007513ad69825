"""The scripted-decoding harness on the real vLLM CPU server (tests/vllm_cpu/scripted).

A flagged request must come back as exactly the scripted text, also with a busy batch; a
looping script must be stopped by vLLM's repetition_detection and by Folio's detector.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from PIL import Image

from app.domain import AttemptStatus
from app.pdf.samples import PARAGRAPHS
from app.settings import PlanStep, VlmEndpoint
from bench.ocr.text import generated_pages
from bench.scripted import SCRIPT_ARG, ScriptedPage, ScriptedVlmEngine
from bench.scripted_loops import build_shapes
from tests.vllm_cpu.fixtures import vllm_required
from tests.vllm_cpu.server import VllmEndpoint

pytestmark = pytest.mark.vllm

CAP = 600  # tokens a loop may run to


def chat(endpoint: VllmEndpoint, script: str, max_tokens: int = CAP, **params: object) -> dict:
    body = {
        "model": endpoint.model,
        "messages": [{"role": "user", "content": "Transcribe the text on this page."}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "vllm_xargs": {SCRIPT_ARG: script},
        **params,
    }
    response = httpx.post(f"{endpoint.base_url}/chat/completions", json=body, timeout=120)
    response.raise_for_status()
    return response.json()


@pytest.fixture(scope="module")
def scripted(vllm_endpoint: VllmEndpoint) -> VllmEndpoint:
    """The endpoint, once it is known to run the scripted-decoding processor."""
    probe = "Scripted decoding is installed."
    if chat(vllm_endpoint, probe, max_tokens=40)["choices"][0]["message"]["content"] != probe:
        reason = "the vLLM venv lacks the scripted-decoding processor: run setup_env.sh"
        if vllm_required():
            pytest.fail(reason)
        pytest.skip(reason)
    return vllm_endpoint


def test_scripted_texts_come_back_exactly_from_a_full_batch(scripted: VllmEndpoint) -> None:
    pages = [page.text for page in generated_pages(12)]
    latin = [text for text in pages if max(map(ord, text)) < 0x3000]
    cjk = next(text for text in pages if max(map(ord, text)) >= 0x3000)[-150:]
    texts = [text[: 200 + 90 * i] for i, text in enumerate(latin[:7])] + [cjk]
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda text: chat(scripted, text, max_tokens=1000), texts))

    for text, reply in zip(texts, replies, strict=True):
        assert reply["choices"][0]["message"]["content"] == text
        assert reply["choices"][0]["finish_reason"] == "stop"  # EOS after the script
    tokens = [reply["usage"]["completion_tokens"] for reply in replies]
    assert all(count < len(text) for count, text in zip(tokens[:-1], texts, strict=False))
    assert tokens[-1] > len(cjk)  # a Han character takes several byte tokens


def test_unflagged_requests_decode_as_before(scripted: VllmEndpoint) -> None:
    body = {"model": scripted.model, "messages": [{"role": "user", "content": "Hello"}]}
    response = httpx.post(
        f"{scripted.base_url}/chat/completions", json={**body, "max_tokens": 30}, timeout=120
    )

    # the random model never says EOS by itself: only a script ends a request early
    assert response.json()["choices"][0]["finish_reason"] == "length"


def looping_script(name: str) -> str:
    shape = next(s for s in build_shapes(generated_pages(), [], 20 * CAP) if s.name == name)
    return shape.text


def test_a_scripted_loop_runs_to_the_cap_without_a_stop(scripted: VllmEndpoint) -> None:
    reply = chat(scripted, looping_script("line-exact"))

    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["usage"]["completion_tokens"] == CAP


def test_repetition_detection_stops_a_scripted_line_loop(scripted: VllmEndpoint) -> None:
    detection = {"max_pattern_size": 64, "min_count": 4}
    reply = chat(scripted, looping_script("line-exact"), repetition_detection=detection)

    assert reply["choices"][0]["finish_reason"] == "repetition"
    assert reply["usage"]["completion_tokens"] < CAP // 2


def test_folio_detector_stops_a_scripted_block_loop(scripted: VllmEndpoint) -> None:
    endpoint = VlmEndpoint(base_url=scripted.base_url, model=scripted.model, max_image_side=256)
    engine = ScriptedVlmEngine("primary", endpoint)
    page = ScriptedPage(
        raster=Image.new("RGB", (200, 280), "white"),
        text_layer="",
        text_layer_usable=False,
        healthy_text="unused",
        looping_text="Page 1\n\n" + (" ".join(PARAGRAPHS[:2]) + "\n\n") * 40,  # 332 characters
    )
    step = PlanStep(name="greedy", engine="vlm", endpoint="primary", max_tokens=CAP)
    try:
        result = engine.transcribe(page, step)
    finally:
        engine.close()

    assert result.status is AttemptStatus.DEGENERATE
    assert result.aborted
    assert result.verdict is not None and result.verdict.period > 200
    assert (result.completion_tokens or CAP) < CAP
