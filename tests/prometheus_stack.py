"""Real processes for the live Prometheus tests: Debian's Prometheus (with Folio's rules), the
GPU stand-in for vLLM (bench/vllm_standin), `folio serve`, and Debian's SQL exporter over the
test database. Every wait is on an answer (a health route, a count), with a generous cap."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml
from sqlalchemy.engine import make_url

from tests.api_server import free_port
from tests.conftest import unavailable
from tests.distributed_support import ROOT, wait_until
from tests.vllm_cpu.server import VllmEndpoint, metric_total

PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
FOLIO = str(Path(sys.executable).parent / "folio")
SCRAPE = "1s"  # short, so a short job leaves many samples; counts, not clocks, are asserted


PROMQL_WORDS = {
    "sum", "max", "min", "by", "on", "and", "or", "unless", "offset", "rate", "increase",
    "min_over_time", "label_replace", "group_left", "without", "ignoring", "histogram_quantile",
}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers that are not in a string, not
    a label matcher or grouping label, not a function or keyword, not a duration."""
    bare = re.sub(r'"[^"]*"', '""', expr)
    bare = re.sub(r"\{[^}]*\}", "{}", bare)  # label matchers
    bare = re.sub(r"\b(by|on|without|ignoring)\s*\([^)]*\)", " ", bare)  # grouping labels
    bare = re.sub(r"\[[^\]]*\]", "[]", bare)
    bare = re.sub(r"\boffset\s+\w+", " ", bare)
    words = re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*[\{\[\s)*/+>-]|$)", bare)
    return {w for w in words if w not in PROMQL_WORDS and not re.fullmatch(r"\d+\w*", w)}


def dashboard_exprs() -> list[str]:
    """Every query of deploy/grafana/folio.json."""
    board = json.loads((ROOT / "deploy" / "grafana" / "folio.json").read_text(encoding="utf-8"))
    return [t["expr"] for p in board["panels"] for t in p.get("targets", [])]


def binary(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        unavailable(f"{name} is not installed (Debian's {package} package)")
    assert found is not None
    return found


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def process(command: list[str], log: Path, ready_url: str, env: dict[str, str] | None = None,
            ) -> Iterator[subprocess.Popen[bytes]]:  # fmt: skip
    with log.open("ab") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        wait_until(lambda: proc.poll() is None and _answers(ready_url), 120, command[0],
                   lambda: log.read_text(errors="replace")[-2000:])  # fmt: skip
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def standin(port: int, model: str, loop_rate: float, log: Path) -> Iterator[str]:
    """The GPU stand-in, 20x faster than the H100 it models, serving `model`."""
    command = [sys.executable, "-m", "bench.vllm_standin", "--port", str(port), "--model", model]
    command += ["--loop-rate", str(loop_rate), "--slowdown", "0.05", "--max-num-seqs", "32"]
    url = f"http://127.0.0.1:{port}"
    with process(command, log, f"{url}/health"):
        yield url


def serve_env(database_url: str, standin_url: str, model: str, tmp: Path) -> dict[str, str]:
    endpoint = {
        "base_url": f"{standin_url}/v1",
        "model": model,
        "profile": "olmocr2",
        "engine_plugin": False,
        "server_repetition_detection": False,
        "abort_call": False,
        "close_probe": False,  # the stand-in runs no probe-sized request to its cap
        "max_concurrency": 16,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
    env.update(
        FOLIO_DATABASE_URL=database_url,
        FOLIO_ENGINE="vlm",
        FOLIO_DPI="72",
        FOLIO_DATA_DIR=str(tmp / "folio-data"),
        FOLIO_UPLOAD_DIR=str(tmp / "uploads"),
        FOLIO_CONFIG=str(tmp / "absent-folio.toml"),
        FOLIO_VLM_ENDPOINTS=json.dumps({"primary": endpoint}),
        PYTHONPATH=str(ROOT),
    )
    return env


@contextmanager
def folio_serve(port: int, env: dict[str, str], log: Path) -> Iterator[str]:
    url = f"http://127.0.0.1:{port}"
    with process([FOLIO, "serve", "--port", str(port)], log, f"{url}/healthz", env):
        yield url


@contextmanager
def sql_exporter(database_url: str, port: int, tmp: Path) -> Iterator[str]:
    """deploy/prometheus/sql-exporter.yaml with the test database as its connection."""
    url = make_url(database_url)
    dsn = f"postgres://{url.username}@{url.host}:{url.port or 5432}/{url.database}?sslmode=disable"
    config = yaml.safe_load((PROMETHEUS_DIR / "sql-exporter.yaml").read_text(encoding="utf-8"))
    for job in config["jobs"]:
        job["connections"] = [dsn]
        job["interval"] = SCRAPE
    path = tmp / "sql-exporter.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [binary("prometheus-sql-exporter", "prometheus-sql-exporter")]
    command += ["-config.file", str(path), "-web.listen-address", f"127.0.0.1:{port}"]
    with process(command, tmp / "sql-exporter.log", f"http://127.0.0.1:{port}/metrics"):
        yield f"127.0.0.1:{port}"


@contextmanager
def redis_exporter(redis_url: str, db: int, port: int, tmp: Path) -> Iterator[str]:
    """Debian's redis_exporter, reporting the length of Folio's Celery lists in Redis `db`."""
    command = [binary("prometheus-redis-exporter", "prometheus-redis-exporter")]
    command += ["-redis.addr", redis_url, "-check-keys", f"db{db}=folio:folio.*"]
    command += ["-web.listen-address", f"127.0.0.1:{port}"]
    with process(command, tmp / "redis-exporter.log", f"http://127.0.0.1:{port}/metrics"):
        yield f"127.0.0.1:{port}"


def wait_idle(server: VllmEndpoint, cap_s: float = 300.0) -> None:
    """Until the vLLM server runs no request (a held one runs on to its cap first)."""
    deadline = time.monotonic() + cap_s
    while True:
        samples = server.metrics()
        busy = metric_total(samples, "vllm:num_requests_running") + metric_total(
            samples, "vllm:num_requests_waiting"
        )
        if busy == 0:
            return
        assert time.monotonic() < deadline, "the server never went idle"
        time.sleep(0.2)


class Prometheus:
    """A Prometheus server loaded with deploy/prometheus/folio-rules.yaml, read over its API."""

    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, expr: str) -> list[dict[str, Any]]:
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=30)
        answer.raise_for_status()
        result: list[dict[str, Any]] = answer.json()["data"]["result"]
        return result

    def value(self, expr: str) -> float | None:
        found = self.query(expr)
        return float(found[0]["value"][1]) if found else None

    def alerts(self) -> dict[str, list[dict[str, Any]]]:
        """Active alerts (pending or firing) by name, as Prometheus's rule evaluation has them."""
        answer = httpx.get(f"{self.url}/api/v1/rules", params={"type": "alert"}, timeout=30)
        groups = answer.json()["data"]["groups"]
        return {r["name"]: r["alerts"] for g in groups for r in g["rules"]}


@contextmanager
def prometheus(scrape: list[dict[str, Any]], tmp: Path) -> Iterator[Prometheus]:
    port = free_port()
    config = {
        "global": {"scrape_interval": SCRAPE, "evaluation_interval": SCRAPE},
        "rule_files": [str(PROMETHEUS_DIR / "folio-rules.yaml")],
        "scrape_configs": scrape,
    }
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [binary("prometheus", "prometheus"), f"--config.file={path}"]
    command += [f"--storage.tsdb.path={tmp / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"]
    url = f"http://127.0.0.1:{port}"
    with process(command, tmp / "prometheus.log", f"{url}/-/ready"):
        yield Prometheus(url)
