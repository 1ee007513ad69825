"""On the real vLLM server: tokens the server generated that no attempt received show up in
the report (`server_tokens_unreceived`) and in Folio's Prometheus metrics."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from prometheus_client import generate_latest
from typer.testing import CliRunner

from app.cli.main import app as cli
from app.db.engine import Database
from app.domain import PageStatus
from app.jobs import JobRequest, create_job, run_job_locally
from app.pdf import samples
from app.report.build import build_report
from app.report.metrics import FolioMetrics
from app.settings import PlanStep, Settings, VlmEndpoint
from tests.vllm_cpu.profiles import TINY_PROFILE, TINY_PROFILES
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint

pytestmark = pytest.mark.vllm

UNSEEN = 200  # tokens of a request outside the job, made while the job runs
GREEDY = PlanStep(name="greedy", engine="vlm", endpoint="primary", temperature=0.0, max_tokens=300)
PENALIZED = PlanStep(
    name="penalized",
    engine="vlm",
    endpoint="primary",
    temperature=0.8,
    repetition_penalty=1.3,
    seed=7,
    max_tokens=60,
)


def generate_unseen(base_url: str) -> None:
    """A request no attempt receives: exactly UNSEEN tokens (EOS ignored)."""
    response = httpx.post(
        f"{base_url}/chat/completions",
        json={
            "model": SERVED_MODEL_NAME,
            "messages": [{"role": "user", "content": "count"}],
            "max_tokens": UNSEEN,
            "ignore_eos": True,
            "temperature": 0.0,
        },
        timeout=120,
    )
    response.raise_for_status()
    assert response.json()["usage"]["completion_tokens"] == UNSEEN


def test_tokens_no_attempt_received_are_reported(
    vllm_endpoint: VllmEndpoint, sqlite_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(samples.scanned_pdf([samples.page_text(n) for n in (1, 2)]))
    endpoint = VlmEndpoint(
        base_url=vllm_endpoint.base_url, model=SERVED_MODEL_NAME, profile=TINY_PROFILE.id
    )
    settings = Settings(
        database_url=sqlite_url,
        engine="ladder",
        plans={"ladder": [GREEDY, PENALIZED]},
        vlm_endpoints={"primary": endpoint},
        vlm_concurrency=2,
        profiles=TINY_PROFILES,
    )
    db = Database(sqlite_url)
    job = create_job(settings, db, JobRequest(folder, None, "ladder"))
    sent: list[int] = []

    def on_page(page_id: int, status: PageStatus) -> None:
        # Called while the job runs, before its last server reading.
        if not sent:
            sent.append(page_id)
            generate_unseen(vllm_endpoint.base_url)

    metrics = FolioMetrics()
    run_job_locally(settings, db, job.job_id, job.page_ids, on_page=on_page, metrics=metrics)
    report = build_report(db, settings, job.job_id).report

    assert report.server_tokens_reason is None, report.server_tokens_reason
    unreceived = report.server_tokens_unreceived or 0
    # The greedy pages loop and are aborted: the server may run on past a close, by at most
    # what those requests had left under their cap.
    headroom = sum(
        GREEDY.max_tokens - (p.tokens_generated or 0)  # type: ignore[operator]
        for p in report.degenerate_pages
        if p.aborted
    )
    assert UNSEEN <= unreceived <= UNSEEN + headroom
    assert report.server_tokens_generated == pytest.approx(report.tokens_generated + unreceived)
    assert report.server_degenerate_share is not None and report.server_degenerate_share > 0

    text = generate_latest(metrics.registry).decode()
    assert f'folio_server_tokens_total{{endpoint="primary",kind="unreceived"}} {unreceived}' in text

    shown = CliRunner().invoke(
        cli, ["report", job.job_id, "--format", "json"], env={"FOLIO_DATABASE_URL": sqlite_url}
    )
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["server_tokens_unreceived"] == pytest.approx(unreceived)
