"""Write deploy/grafana/folio.json, Folio's Grafana dashboard, with Grafana's own
grafana-foundation-sdk builders: pages per second, loops (rate by model, kinds), tokens the
loop stop cut, false alarms, the GPU servers' slots, the queues, cost.

`python deploy/grafana/dashboard.py` rewrites the file; `--check` exits 1 where it differs
(tests/test_dashboard.py runs the check and holds every query's metric names to live /metrics).
Metric sources: folio_* (Folio's /metrics), vllm:* (vLLM's), sql_folio_* and redis_key_size
(the two exporters of deploy/prometheus), folio:* (the recording rules there).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard, prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

OUT = Path(__file__).parent / "folio.json"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")

# (title, unit, [(legend, PromQL)]), row by row
ROWS: list[tuple[str, list[tuple[str, str, list[tuple[str, str]]]]]] = [
    (
        "Throughput and cost",
        [
            ("Pages per second", "reqps", [
                ("{{status}}", "sum by (status) (rate(folio_pages_total[5m]))"),
            ]),
            ("Cost per hour", "currencyUSD", [
                ("{{basis}} {{model}}",
                 "sum by (basis, model) (rate(folio_cost_usd_total[1h])) * 3600"),
            ]),
            ("VLM call duration p90", "s", [
                ("{{endpoint}}", "histogram_quantile(0.9, sum by (le, endpoint) "
                 "(rate(folio_attempt_duration_seconds_bucket{engine=\"vlm\"}[5m])))"),
            ]),
        ],
    ),
    (
        "Loops",
        [
            ("Loop rate by model (15 min)", "percentunit", [
                ("{{model}}", "folio:loop_rate:ratio15m"),
                ("{{model}} baseline (day before)", "folio:loop_rate:baseline"),
            ]),
            ("Loops by kind (last hour)", "short", [
                ("{{kind}}", "max by (kind) (sql_folio_loop_kinds{col=\"attempts\"})"),
            ]),
            ("Tokens cut by the loop stop", "short", [
                ("saved {{model}}",
                 "sum by (model) (rate(folio_tokens_total{kind=\"saved\"}[5m]))"),
                ("degenerate {{model}}",
                 "sum by (model) (rate(folio_tokens_total{kind=\"degenerate\"}[5m]))"),
                ("ran on after a close {{endpoint}}",
                 "sum by (endpoint) (rate(folio_server_tokens_total{kind=\"lost_aborts\"}[1h]))"),
            ]),
            ("False alarms", "short", [
                ("{{model}} per s", "sum by (model) (rate(folio_false_alarms_total[15m]))"),
            ]),
        ],
    ),
    (
        "GPU servers and queues",
        [
            ("Slots busy (vLLM)", "short", [
                ("running {{instance}}", "sum by (instance) (vllm:num_requests_running)"),
                ("waiting {{instance}}", "sum by (instance) (vllm:num_requests_waiting)"),
            ]),
            ("KV cache used (vLLM)", "percentunit", [
                ("{{instance}}", "max by (instance) (vllm:kv_cache_usage_perc)"),
            ]),
            ("Tokens generated (vLLM)", "short", [
                ("{{instance}}", "sum by (instance) (rate(vllm:generation_tokens_total[5m]))"),
            ]),
            ("Queue depth (Celery tasks waiting)", "short", [
                ("{{queue}}", "folio:queue_backlog:sum"),
                ("any {{key}}", "sum by (key) (redis_key_size{key=~\"folio:folio\\\\..*\"})"),
            ]),
            ("Pages open (database)", "short", [
                ("{{col}}", "max by (col) "
                 "(sql_folio_pages_open{col=~\"waiting|running|lease_expired\"})"),
            ]),
        ],
    ),
]  # fmt: skip


def panel(number: int, title: str, unit: str, queries: list[tuple[str, str]]) -> timeseries.Panel:
    built = timeseries.Panel().id(number).title(title).unit(unit).datasource(DATASOURCE)
    built = built.height(8).span(8)
    for ref, (legend, expr) in zip("ABCDEFGH", queries, strict=False):
        built = built.with_target(
            prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref)
        )
    return built


def build() -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard("Folio")
        .uid("folio")
        .tags(["folio", "ocr", "vllm"])
        .time("now-6h", "now")
        .refresh("30s")
        .with_variable(
            dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
        )
    )
    number = 0
    for row, panels in ROWS:
        number += 1
        board = board.with_row(dashboard.Row(row).id(number))
        for title, unit, queries in panels:
            number += 1
            board = board.with_panel(panel(number, title, unit, queries))
    return board


def render() -> str:
    return json.dumps(build().build(), cls=JSONEncoder, indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run python deploy/grafana/dashboard.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
