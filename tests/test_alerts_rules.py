"""Folio's Prometheus rules (deploy/prometheus): `promtool check rules` and `promtool test rules`
pass; every metric a rule reads is one something really exports (Folio's own collectors, the
SQL exporter's queries, vLLM's source, the two outside exporters named in the file); the queue
lists the backlog rule matches are exactly those Celery fills; and the SQL exporter's queries
run on Folio's migrated PostgreSQL schema and count what they say they count."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from app.db.models import ApiKey, Attempt, Document, Job, Page, WebhookDelivery
from app.distributed.queue_view import QueueView
from app.report.metrics import FolioMetrics
from app.settings import Settings
from tests.conftest import unavailable
from tests.prometheus_stack import metric_names
from tests.vllm_cpu.server import default_venv

REPO = Path(__file__).resolve().parents[1]
PROMETHEUS = REPO / "deploy" / "prometheus"
RULES = PROMETHEUS / "folio-rules.yaml"
SQL_EXPORTER = PROMETHEUS / "sql-exporter.yaml"
# Metrics of exporters this repo does not run, by their documented names:
# oliver006/redis_exporter (`-check-single-keys`/`-check-keys`) and kube-state-metrics.
OUTSIDE = {
    "redis_key_size",
    "kube_pod_init_container_status_restarts_total",
    "kube_pod_init_container_status_terminated_reason",
    "kube_deployment_status_replicas_available",
}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        unavailable("promtool is not installed (Debian's prometheus package)")
    assert found is not None
    return found


def rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def folio_exported() -> set[str]:
    """The sample names Folio's collectors expose (a family shows no sample before its first
    labels, so the names come from each family's type, as prometheus_client writes them)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    return {
        family.name + suffix
        for family in FolioMetrics().registry.collect()
        for suffix in suffixes.get(family.type, ("",))
    }


def sql_exported() -> dict[str, set[str]]:
    """`sql_<query>` to its value columns (the `col` label), as the SQL exporter names them."""
    jobs = yaml.safe_load(SQL_EXPORTER.read_text(encoding="utf-8"))["jobs"]
    return {f"sql_{q['name']}": set(q["values"]) for job in jobs for q in job["queries"]}


def vllm_exported() -> set[str]:
    """The `vllm:` names in vLLM's own metric code, in the test venv's vLLM."""
    venv = default_venv()
    files = list(venv.glob("lib/python3*/site-packages/vllm/v1/metrics/*.py"))
    if not files:
        unavailable(f"the vLLM test venv is not built ({venv})")
    found = {n for f in files for n in re.findall(r'"(vllm:[a-z_]+)"', f.read_text())}
    return found | {f"{n}_total" for n in found} | {f"{n}_bucket" for n in found}


def test_promtool_checks_and_unit_tests_pass() -> None:
    tool = promtool()
    subprocess.run([tool, "check", "rules", str(RULES)], check=True, capture_output=True)
    tests = sorted((PROMETHEUS / "tests").glob("*.yaml"))
    assert tests
    out = subprocess.run(
        [tool, "test", "rules", *map(str, tests)], capture_output=True, text=True, cwd=PROMETHEUS
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_alert_has_a_unit_test() -> None:
    tested = set()
    for path in (PROMETHEUS / "tests").glob("*.yaml"):
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            tested |= {t["alertname"] for t in case.get("alert_rule_test", [])}
    alerts = {r["alert"] for r in rules() if "alert" in r}
    assert alerts == tested
    assert len(alerts) >= 7


def test_every_metric_a_rule_reads_is_exported() -> None:
    recorded = {r["record"] for r in rules() if "record" in r}
    known = folio_exported() | set(sql_exported()) | vllm_exported() | OUTSIDE | recorded
    read = {name for r in rules() for name in metric_names(r["expr"])}
    assert read - known == set()
    assert {"folio_attempts_total", "folio_false_alarms_total", "vllm:num_requests_waiting"} <= read


def test_the_metric_check_can_fail() -> None:
    assert metric_names('sum(rate(folio_pagez_total{status="failed"}[5m])) > 0') == {
        "folio_pagez_total"
    }
    assert "folio_pagez_total" not in folio_exported()


def test_sql_columns_the_rules_read_are_query_values() -> None:
    columns = sql_exported()
    for rule in rules():
        for name, col in re.findall(r'(sql_\w+)\{[^}]*col="(\w+)"', rule["expr"]):
            assert col in columns[name], (name, col)


def test_the_backlog_rule_matches_exactly_the_lists_celery_fills() -> None:
    [rule] = [r for r in rules() if r.get("record") == "folio:queue_backlog:sum"]
    pattern = re.search(r'key=~"([^"]+)"', rule["expr"])
    assert pattern
    regex = pattern.group(1).replace("\\\\", "\\")
    view = QueueView(Settings(broker_url="redis://unused:6379/0"))
    lists = set(view.lists)
    view.close()
    assert len(lists) == 20
    assert all(re.fullmatch(regex, key) for key in lists)
    for other in ("folio:unacked", "folio:unacked_index", "folio:_kombu.binding.folio.gpu"):
        assert not re.fullmatch(regex, other)


def sql_queries() -> dict[str, str]:
    jobs = yaml.safe_load(SQL_EXPORTER.read_text(encoding="utf-8"))["jobs"]
    return {q["name"]: q["query"] for job in jobs for q in job["queries"]}


def seed(session: Session) -> None:
    """A job done, one undelivered, and one an hour and a half old: a page waiting, one running
    on a lapsed lease, one running on a live lease, a done page with VLM attempts (one under a
    NOT live close now, one degenerate now, one of each three hours ago), and webhook
    deliveries (one failed now, one pending for 20 minutes, one delivered)."""
    now = datetime.now(UTC)
    job = Job(
        id="j1",
        status="running",
        source="x",
        plan_name="vlm",
        created_at=now - timedelta(minutes=90),
    )
    key = ApiKey(name="k", token_sha256="0" * 64)
    sent = Job(id="j2", status="done", source="y", plan_name="vlm")
    unsent = Job(id="j3", status="undelivered", source="z", plan_name="vlm")
    session.add_all([job, key, sent, unsent])
    session.flush()
    doc = Document(job_id="j1", path="x.pdf", name="x.pdf", status="running")
    session.add(doc)
    session.flush()
    pages = [
        Page(job_id="j1", document_id=doc.id, number=1, status="pending"),
        Page(job_id="j1", document_id=doc.id, number=2, status="running",
             lease_until=now - timedelta(minutes=5)),
        Page(job_id="j1", document_id=doc.id, number=3, status="running",
             lease_until=now + timedelta(minutes=1)),
        Page(job_id="j1", document_id=doc.id, number=4, status="succeeded"),
    ]  # fmt: skip
    session.add_all(pages)
    session.flush()
    for verdict, started, status, kind in (
        ("NOT live", now, "ok", None),
        ("live", now, "degenerate", "cycle"),
        ("NOT live", now - timedelta(hours=3), "degenerate", "stutter"),
    ):
        session.add(
            Attempt(
                job_id="j1", page_id=pages[3].id, step_index=0, step_name="s", engine="vlm",
                endpoint="http://a/v1", params={"loop_stop_close": verdict}, status=status,
                verdict_kind=kind, started_at=started, ended_at=started, duration_s=1.0,
            )
        )  # fmt: skip
    for status, created, finished in (
        ("failed", now - timedelta(minutes=30), now),
        ("pending", now - timedelta(minutes=20), None),
        ("delivered", now - timedelta(minutes=30), now),
    ):
        session.add(
            WebhookDelivery(
                job_id="j1", api_key_id=key.id, event="job.done", dedupe_key=f"{status}-1",
                url="http://x", status=status, created_at=created, finished_at=finished,
            )
        )  # fmt: skip


@pytest.mark.postgres
def test_the_sql_exporter_queries_count_what_they_say(postgres_url: str) -> None:
    engine = create_engine(postgres_url)
    with Session(engine) as session:
        seed(session)
        session.commit()
    queries = sql_queries()
    with engine.connect() as conn:
        pages = conn.execute(text(queries["folio_pages_open"])).mappings().one()
        hooks = conn.execute(text(queries["folio_webhooks"])).mappings().one()
        jobs = conn.execute(text(queries["folio_jobs"])).mappings().one()
        verdicts = conn.execute(text(queries["folio_close_verdicts"])).mappings().all()
        kinds = conn.execute(text(queries["folio_loop_kinds"])).mappings().all()
    engine.dispose()
    assert (pages["waiting"], pages["running"], pages["lease_expired"]) == (1, 2, 1)
    assert 90 * 60 - 5 <= pages["oldest_waiting_seconds"] <= 90 * 60 + 300
    assert (hooks["failed_1h"], hooks["overdue"]) == (1, 1)
    assert jobs["undelivered"] == 1
    assert sorted((v["verdict"], v["attempts"]) for v in verdicts) == [("NOT live", 1), ("live", 1)]
    assert [(k["kind"], k["attempts"]) for k in kinds] == [("cycle", 1)]  # the last hour only
