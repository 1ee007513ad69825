"""The close alert end to end on the real vLLM CPU server: one-page VLM jobs run by Folio's own
pipeline into PostgreSQL, one straight to the server and one through a proxy that holds the
upstream stream open after its client leaves (nginx's `proxy_ignore_client_abort on`). Each
engine's close probe records its verdict on the attempts; Debian's SQL exporter reads them
with deploy/prometheus/sql-exporter.yaml, Debian's Prometheus scrapes it every second, and
FolioCloseNotLive's own expression, asked through the HTTP API, names the held endpoint only.

The probe's cap is the least it accepts (4 x CLOSE_SLACK) as in
tests/vllm_cpu/test_close_liveness.py: a close that is NOT live runs the probe to its cap."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from app.db.engine import Database
from app.db.models import Attempt
from app.engines import vlm_close_probe
from app.engines.vlm_close_probe import CLOSE_SLACK
from app.jobs import JobRequest, create_job, run_job_locally
from app.settings import PlanStep, Settings, VlmEndpoint
from tests.api_server import free_port
from tests.distributed_support import wait_until, write_text_pdfs
from tests.http_proxies import ProxyProcess
from tests.prometheus_stack import PROMETHEUS_DIR, prometheus, sql_exporter, wait_idle
from tests.vllm_cpu.server import VllmEndpoint

pytestmark = [pytest.mark.vllm, pytest.mark.postgres]


@pytest.fixture(autouse=True)
def short_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vlm_close_probe, "PROBE_CAP", 4 * CLOSE_SLACK)


def endpoint(server: VllmEndpoint, base_url: str) -> VlmEndpoint:
    return VlmEndpoint(
        base_url=base_url,
        model=server.model,
        metrics_url=f"{server.root_url}/metrics",  # the counters, never through the proxy
        engine_plugin=False,  # as deploy/k8s configures it: the close is the stop
        abort_call=False,
        server_repetition_detection=False,
        transport_retry_s=5,
        max_image_side=224,  # the tiny server's context is 2,048 tokens
    )


def run_one_page(database_url: str, name: str, at: VlmEndpoint, folder: Path) -> str:
    step = PlanStep(name="read", engine="vlm", endpoint=name, temperature=0.0, max_tokens=32)
    settings = Settings(
        database_url=database_url, engine=name, plans={name: [step]}, vlm_endpoints={name: at}
    )
    db = Database(database_url)
    ingested = create_job(settings, db, JobRequest(folder, None, name))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    return ingested.job_id


def close_alert() -> str:
    groups = yaml.safe_load((PROMETHEUS_DIR / "folio-rules.yaml").read_text(encoding="utf-8"))
    rules = [r for g in groups["groups"] for r in g["rules"]]
    [expr] = [r["expr"] for r in rules if r.get("alert") == "FolioCloseNotLive"]
    return str(expr)


def test_the_close_alert_names_the_endpoint_behind_a_holding_proxy(
    vllm_endpoint: VllmEndpoint, postgres_url: str, tmp_path: Path
) -> None:
    write_text_pdfs(tmp_path / "in", documents=1, pages=1)
    upstream = vllm_endpoint.root_url.removeprefix("http://")
    with ProxyProcess("hold", tmp_path, upstream=upstream) as holding:
        held = run_one_page(postgres_url, "held", endpoint(vllm_endpoint, f"{holding.url}/v1"),
                            tmp_path / "in")  # fmt: skip
    wait_idle(vllm_endpoint)  # the held probe runs on to its cap
    direct = run_one_page(postgres_url, "direct", endpoint(vllm_endpoint, vllm_endpoint.base_url),
                          tmp_path / "in")  # fmt: skip
    with Database(postgres_url).session() as session:
        rows = session.execute(select(Attempt.job_id, Attempt.endpoint, Attempt.params)).all()
    recorded = {job: (endpoint, params.get("loop_stop_close")) for job, endpoint, params in rows}
    assert recorded[held][1] == "NOT live" and recorded[direct][1] == "live", recorded

    with (
        sql_exporter(postgres_url, free_port(), tmp_path) as sql,
        prometheus([{"job_name": "folio-db", "static_configs": [{"targets": [sql]}]}], tmp_path)
        as prom,
    ):  # fmt: skip
        verdicts = 'count(sql_folio_close_verdicts{col="attempts"})'
        wait_until(lambda: prom.value(verdicts) == 2, 120, "both verdicts scraped")
        firing = {r["metric"]["endpoint"] for r in prom.query(close_alert())}
    assert firing == {recorded[held][0]}
    wait_idle(vllm_endpoint)
