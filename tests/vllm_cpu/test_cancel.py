"""A job cancelled mid-stream on the real vLLM CPU server: its requests stop at once.

The tiny model's greedy loops run to their token cap unless something ends them; Folio's
detector is blinded here so that only the cancel can. The server's
`vllm:generation_tokens_total` counts every token it generated, read by a client or not.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import select

from app import samples
from app.db.engine import Database
from app.db.models import Attempt, Page
from app.settings import PlanStep, Settings, VlmEndpoint
from tests.api_server import running_api, wait_for_job
from tests.test_api import settings_for, submit
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint
from tests.vllm_cpu.streams import wait_until_stable

pytestmark = pytest.mark.vllm

PAGES, CAP = 4, 1500  # the test server's context is 2,048 tokens, the page's prompt included
# A detector that never calls a loop: every periodicity, line and run check out of reach.
BLIND = {
    "check_stride": 10**9,
    "drift_check_stride": 10**9,
    "line_min_repeats": 10**6,
    "char_run_min": 10**9,
    "letter_run_min": 10**9,
    "blank_run_min": 10**9,
    "short_run_min_repeats": 10**6,
}
# Tokens the server may generate per request after the cancel: the cancel check, the next
# chunk, the close, and the server noticing it (the bound the issue sets: "a few").
AFTER_CANCEL_PER_REQUEST = 16


def cancel_settings(db_url: str, tmp_path: Path, server: VllmEndpoint) -> Settings:
    endpoint = VlmEndpoint(
        base_url=server.base_url,
        model=SERVED_MODEL_NAME,
        engine_plugin=False,
        abort_call=False,
        server_repetition_detection=False,
        transport_retry_s=5,
        max_image_side=224,
    )
    step = PlanStep(name="greedy", engine="vlm", endpoint="primary", temperature=0.0)
    return settings_for(
        db_url,
        tmp_path,
        engine="loop",
        plans={"loop": [step.model_copy(update={"max_tokens": CAP})]},
        vlm_endpoints={"primary": endpoint},
        vlm_concurrency=PAGES,
        detector=BLIND,
        repeat_loop_cap=None,
    )


def test_cancel_stops_every_stream_in_flight(
    vllm_endpoint: VllmEndpoint, sqlite_url: str, tmp_path: Path
) -> None:
    settings = cancel_settings(sqlite_url, tmp_path, vllm_endpoint)
    blank = samples.born_digital_pdf([""] * PAGES)
    before = wait_until_stable(vllm_endpoint.generation_tokens_total, hold=1.0)
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        job_id = submit(client, [("loops.pdf", blank)]).json()["id"]  # type: ignore[attr-defined]
        deadline = time.monotonic() + 300
        while vllm_endpoint.generation_tokens_total() - before < PAGES * 50:
            assert time.monotonic() < deadline, "the streams never started"
            assert client.get(f"/v1/jobs/{job_id}").json()["status"] != "done"
            time.sleep(0.1)
        at_cancel = vllm_endpoint.generation_tokens_total()
        cancelled = client.post(f"/v1/jobs/{job_id}/cancel")
        after = wait_until_stable(vllm_endpoint.generation_tokens_total)
        job = wait_for_job(client, job_id)
    with Database(sqlite_url).session() as session:
        pages = session.scalars(select(Page).where(Page.job_id == job_id)).all()
        attempts = session.scalars(select(Attempt).where(Attempt.job_id == job_id)).all()

    assert cancelled.status_code == 200 and job["status"] == "cancelled"
    assert {(p.status, p.failure_category) for p in pages} == {("failed", "cancelled")}
    assert len(attempts) == PAGES
    assert all(a.error and "cancelled" in a.error and a.aborted for a in attempts), attempts
    generated_after = after - at_cancel
    print(f"server tokens after the cancel: {generated_after:.0f} for {PAGES} requests")
    assert generated_after <= PAGES * AFTER_CANCEL_PER_REQUEST
    assert after - before < PAGES * CAP / 2  # no loop ran on to its cap
