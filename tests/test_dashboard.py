"""Folio's Grafana dashboard (deploy/grafana): generated from deploy/grafana/dashboard.py with
grafana-foundation-sdk, it shows what the issue asks for, and every query names a metric that
is really exported: vLLM's names here against the real vLLM CPU server's /metrics, Folio's and
the exporters' in tests/test_alerts_live.py against what a live Prometheus scraped."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from tests.prometheus_stack import PROMETHEUS_DIR, dashboard_exprs, metric_names
from tests.vllm_cpu.server import VllmEndpoint

GRAFANA = Path(__file__).resolve().parents[1] / "deploy" / "grafana"


def generator() -> ModuleType:
    name = "deploy_grafana_dashboard"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, GRAFANA / "dashboard.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def dashboard_names() -> set[str]:
    return {name for expr in dashboard_exprs() for name in metric_names(expr)}


def recorded() -> set[str]:
    groups = yaml.safe_load((PROMETHEUS_DIR / "folio-rules.yaml").read_text(encoding="utf-8"))
    return {r["record"] for g in groups["groups"] for r in g["rules"] if "record" in r}


def test_the_dashboard_is_generated_from_its_script() -> None:
    assert generator().main(["--check"]) == 0
    board = json.loads((GRAFANA / "folio.json").read_text(encoding="utf-8"))
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    assert {p["datasource"]["uid"] for p in board["panels"] if "targets" in p} == {"${datasource}"}


def test_the_dashboard_shows_what_an_operator_asks_for() -> None:
    """Pages per second, loop rate and kinds, tokens cut, false alarms, slots busy, queue
    depth, cost: each by the metric that carries it."""
    assert {
        "folio_pages_total",
        "folio:loop_rate:ratio15m",
        "sql_folio_loop_kinds",
        "folio_tokens_total",
        "folio_false_alarms_total",
        "vllm:num_requests_running",
        "folio:queue_backlog:sum",
        "folio_cost_usd_total",
    } <= dashboard_names()


def test_recorded_names_come_from_folio_rules() -> None:
    used = {n for n in dashboard_names() if n.startswith("folio:")}
    assert used and used <= recorded()


@pytest.mark.vllm
def test_every_vllm_name_is_on_a_real_vllm_metrics_page(vllm_endpoint: VllmEndpoint) -> None:
    exported = {name for name, _ in vllm_endpoint.metrics()}
    wanted = {n for n in dashboard_names() if n.startswith("vllm:")}
    assert len(wanted) >= 3
    assert wanted - exported == set()
