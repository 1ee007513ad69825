"""Prometheus metrics as a scraper sees them, fed by the real page pipeline."""

from __future__ import annotations

import asyncio
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

from app.db.engine import Database
from app.domain import AttemptStatus, EngineResult
from app.jobs import JobRequest, create_job, run_job_locally
from app.pdf import samples
from app.report.metrics import FolioMetrics, make_asgi_app, make_metrics, start_metrics_server
from app.settings import Settings
from tests.report_scenario import PRICING, T0


def value(metrics: FolioMetrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def test_a_degenerate_attempt_is_counted_with_its_tokens_and_cost() -> None:
    metrics = FolioMetrics(PRICING)
    loop = EngineResult(
        text="x" * 50,
        status=AttemptStatus.DEGENERATE,
        started_at=T0,
        ended_at=T0 + timedelta(seconds=2),
        model="m-api",
        endpoint="api",
        prompt_tokens=1000,
        completion_tokens=500,
        max_tokens=4000,
        aborted=True,
    )
    metrics.observe_attempt("vlm", loop)
    outcome = {"outcome": "degenerate", "engine": "vlm", "model": "m-api"}
    assert value(metrics, "folio_attempts_total", **outcome) == 1
    assert value(metrics, "folio_degenerate_attempts_total", engine="vlm", model="m-api") == 1
    tokens = {
        k: value(metrics, "folio_tokens_total", kind=k, model="m-api")
        for k in ("prompt", "generated", "degenerate", "saved")
    }
    assert tokens == {"prompt": 1000, "generated": 500, "degenerate": 500, "saved": 3500}
    cost = value(metrics, "folio_cost_usd_total", basis="tokens", model="m-api")
    assert abs(cost - 0.002) < 1e-12
    labels = {"engine": "vlm", "endpoint": "api", "outcome": "degenerate", "le": "2.5"}
    assert value(metrics, "folio_attempt_duration_seconds_bucket", **labels) == 1


def test_pipeline_feeds_metrics_and_server_exposes_them(sqlite_url: str, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    pdf = samples.born_digital_pdf([samples.page_text(1), samples.page_text(2)])
    (tmp_path / "in" / "a.pdf").write_bytes(pdf)
    settings = Settings(database_url=sqlite_url, concurrency=1, cpu_usd_per_hour=36.0)
    db = Database(sqlite_url)
    ingested = create_job(settings, db, JobRequest(tmp_path / "in", None, "auto"))
    metrics, other = make_metrics(settings), make_metrics(settings)
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids, metrics=metrics)

    assert value(metrics, "folio_pages_total", status="succeeded") == 2
    ok = {"outcome": "ok", "engine": "textlayer", "model": "none"}
    assert value(metrics, "folio_attempts_total", **ok) == 2
    assert value(metrics, "folio_cost_usd_total", basis="cpu", model="none") > 0
    assert value(other, "folio_pages_total", status="succeeded") == 0  # registries are separate

    server, thread = start_metrics_server(metrics, 0)
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read().decode()
    finally:
        server.shutdown()
        thread.join(5)
    assert 'folio_pages_total{status="succeeded"} 2.0' in body
    assert 'folio_pages_total{status="succeeded"} 2.0' in asyncio.run(asgi_get(metrics))


async def asgi_get(metrics: FolioMetrics) -> str:
    """GET / on the metrics ASGI app, as the API's server would call it."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": b""}
    await make_asgi_app(metrics)(scope, receive, send)
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()


def test_each_configured_model_s_series_start_at_zero() -> None:
    """Before a model's first attempt its series are scraped at 0: a job that ends between two
    scrapes still shows Prometheus an increase (`rate()` of a series first seen at its count
    is 0)."""
    settings = Settings()
    model = next(iter(settings.vlm_endpoints.values())).model

    metrics = make_metrics(settings)

    labels = {"outcome": "degenerate", "engine": "vlm", "model": model}
    degenerate = {"engine": "vlm", "model": model}
    assert metrics.registry.get_sample_value("folio_attempts_total", labels) == 0
    assert metrics.registry.get_sample_value("folio_degenerate_attempts_total", degenerate) == 0
    assert FolioMetrics().registry.get_sample_value("folio_attempts_total", labels) is None
