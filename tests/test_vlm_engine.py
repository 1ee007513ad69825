"""The VLM engine against a real vLLM server on the CPU (tiny random Qwen2-VL).

Greedy decoding on that model loops for real; penalised sampling does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from app.db.engine import Database
from app.db.models import Attempt, Page
from app.domain import AttemptStatus, PageInput
from app.engines.vlm import VlmEngine
from app.jobs import JobRequest, create_job, run_job_locally
from app.pdf import samples
from app.pdf.render import render_page
from app.settings import PlanStep, Settings, VlmEndpoint
from tests.vllm_cpu.profiles import TINY_PROFILE, TINY_PROFILES
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint
from tests.vllm_cpu.streams import wait_until_stable

pytestmark = pytest.mark.vllm

GREEDY = PlanStep(name="greedy", engine="vlm", endpoint="primary", temperature=0.0, max_tokens=1500)
PENALIZED = PlanStep(
    name="penalized",
    engine="vlm",
    endpoint="primary",
    temperature=0.8,
    repetition_penalty=1.3,
    seed=7,
    max_tokens=120,
)


# Only the client's own stop (closing the stream) unless a test asks for a server-side one;
# the others are tested in tests/vllm_cpu/test_engine_stops.py.
CLIENT_CLOSE_ONLY = {
    "engine_plugin": False,
    "abort_call": False,
    "server_repetition_detection": False,
}


def endpoint_for(url: str, **extra: object) -> VlmEndpoint:
    settings = {**CLIENT_CLOSE_ONLY, **extra}
    return VlmEndpoint(
        base_url=url,
        model=SERVED_MODEL_NAME,
        transport_retry_s=5,
        profile=TINY_PROFILE.id,
        max_image_side=1288,  # the page render as it is, at most 1288 px (no enlarging)
        **settings,
    )


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> PageInput:
    path = tmp_path_factory.mktemp("pdf") / "scan.pdf"
    path.write_bytes(samples.scanned_pdf([samples.page_text(2)]))
    rendered = render_page(path, 1, 100, 1000)
    return PageInput(rendered.image, rendered.text_layer, False)


class SilentDetector:
    """A detector that never fires, to leave loop stopping to the server."""

    def feed(self, chunk: str) -> None:
        return None


def test_greedy_loop_is_caught_while_streaming_and_aborted(
    vllm_endpoint: VllmEndpoint, page: PageInput
) -> None:
    engine = VlmEngine("primary", endpoint_for(vllm_endpoint.base_url), profile=TINY_PROFILE)
    before = vllm_endpoint.generation_tokens_total()
    try:
        result = engine.transcribe(page, GREEDY)
    finally:
        engine.close()
    # the server stops generating once it sees the closed connection: count when it has
    spent = wait_until_stable(vllm_endpoint.generation_tokens_total) - before
    assert result.status is AttemptStatus.DEGENERATE
    assert result.aborted and result.finish_reason == "abort"
    assert result.stop_mechanism == "client_close" and result.tokens_after_verdict is None
    assert result.verdict is not None and result.verdict.period > 0
    assert result.tokens_estimated and (result.completion_tokens or 0) < 300
    assert spent < 400, f"server generated {spent} tokens for an aborted 1500-token request"
    assert result.text and result.ttft_s is not None


def test_penalised_sampling_is_healthy(vllm_endpoint: VllmEndpoint, page: PageInput) -> None:
    engine = VlmEngine("primary", endpoint_for(vllm_endpoint.base_url), profile=TINY_PROFILE)
    try:
        result = engine.transcribe(page, PENALIZED)
    finally:
        engine.close()
    assert result.status is AttemptStatus.OK, result.text
    assert result.finish_reason == "length" and not result.tokens_estimated
    assert result.completion_tokens == 120 and (result.prompt_tokens or 0) > 0
    assert result.params["repetition_penalty"] == 1.3 and result.params["seed"] == 7


def test_server_side_repetition_detection(vllm_endpoint: VllmEndpoint, page: PageInput) -> None:
    endpoint = endpoint_for(vllm_endpoint.base_url, server_repetition_detection=True)
    engine = VlmEngine("primary", endpoint, detector_factory=SilentDetector, profile=TINY_PROFILE)
    try:
        result = engine.transcribe(page, GREEDY)
    finally:
        engine.close()
    assert result.finish_reason == "repetition"
    assert result.status is AttemptStatus.DEGENERATE and not result.aborted
    assert (result.completion_tokens or 0) < 1500


def run_vlm_job(url: str, db_url: str, folder: Path, retry_s: float = 5) -> str:
    settings = Settings(
        database_url=db_url,
        engine="ladder",
        plans={"ladder": [GREEDY, PENALIZED, PlanStep(name="tesseract", engine="tesseract")]},
        vlm_endpoints={
            "primary": endpoint_for(url).model_copy(update={"transport_retry_s": retry_s})
        },
        vlm_concurrency=8,
        profiles=TINY_PROFILES,
    )
    db = Database(db_url)
    ingested = create_job(settings, db, JobRequest(folder, None, "ladder"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    return ingested.job_id


def test_ladder_records_every_attempt(
    vllm_endpoint: VllmEndpoint, db_url: str, tmp_path: Path
) -> None:
    (tmp_path / "scan.pdf").write_bytes(
        samples.scanned_pdf([samples.page_text(n) for n in (1, 2, 3)])
    )
    job_id = run_vlm_job(vllm_endpoint.base_url, db_url, tmp_path)
    with Database(db_url).session() as session:
        pages = session.scalars(select(Page).where(Page.job_id == job_id)).all()
        attempts = session.scalars(select(Attempt).order_by(Attempt.id)).all()
        assert [p.status for p in pages] == ["fallback"] * 3
        assert {p.final_step for p in pages} == {"penalized"}
        first = [a for a in attempts if a.step_name == "greedy"]
        assert len(first) == 3 and all(a.status == "degenerate" and a.aborted for a in first)
        assert all(a.verdict_kind and a.verdict_period and a.output for a in first)
        assert all(a.stop_mechanism == "client_close" for a in first)
        assert all(a.stop_mechanism == "none" for a in attempts if a.step_name == "penalized")
        second = [a for a in attempts if a.step_name == "penalized"]
        assert all(a.params["temperature"] == 0.8 and a.completion_tokens == 120 for a in second)
        assert all(a.model == SERVED_MODEL_NAME and a.prompt_version for a in attempts)
