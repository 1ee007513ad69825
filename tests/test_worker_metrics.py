"""A Celery worker's /metrics (workers/metrics.py): a real `folio worker` process on the real
Redis and PostgreSQL runs a text-layer job, and its endpoint counts the job's attempts and
pages as the database records them."""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from celery.concurrency import get_implementation
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.db.models import Attempt, Job, Page
from app.settings import Settings
from tests.conftest import REDIS_URL
from tests.distributed_support import (
    start_worker,
    stop_worker,
    wait_until,
    worker_env,
    write_text_pdfs,
)
from workers.metrics import runs_tasks_in_process, serve_worker_metrics

Labels = tuple[str, ...]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape(port: int, name: str, *labels: str) -> Counter[Labels]:
    """The `name` counter's samples on the worker's /metrics, summed by `labels`."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    found: Counter[Labels] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == f"{name}_total":
                found[tuple(sample.labels[label] for label in labels)] += int(sample.value)
    return found


def recorded(db: Database, job_id: str) -> tuple[Counter[Labels], Counter[Labels]]:
    """The job's attempts by (status, engine) and pages by status, as the database has them."""
    with db.session() as session:
        attempts = session.execute(
            select(Attempt.status, Attempt.engine, func.count())
            .where(Attempt.job_id == job_id)
            .group_by(Attempt.status, Attempt.engine)
        ).all()
        pages = session.execute(
            select(Page.status, func.count()).where(Page.job_id == job_id).group_by(Page.status)
        ).all()
    return (
        Counter({(status, engine): n for status, engine, n in attempts}),
        Counter({(status,): n for status, n in pages}),
    )


@pytest.fixture
def worker_port(
    postgres_url: str, prefix: str, tmp_path: Path
) -> Iterator[tuple[int, dict[str, str]]]:
    """A real `folio worker` serving its metrics on a free port, and its environment."""
    port = free_port()
    env = worker_env(postgres_url, REDIS_URL, prefix, FOLIO_WORKER_METRICS_PORT=str(port))
    worker = start_worker(env, concurrency=2, log=tmp_path / "worker.log")
    try:
        yield port, env
    finally:
        stop_worker(worker)


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_a_worker_serves_the_attempts_and_pages_of_the_job_it_ran(
    worker_port: tuple[int, dict[str, str]],
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port, env = worker_port
    pages = write_text_pdfs(tmp_path / "in", documents=2, pages=3)
    for key, value in env.items():
        if key.startswith("FOLIO_"):
            monkeypatch.setenv(key, value)
    submitted = CliRunner().invoke(app, ["submit", str(tmp_path / "in")])
    assert submitted.exit_code == 0, submitted.output
    job_id = submitted.stdout.strip().splitlines()[-1]
    db = Database(postgres_url)

    def done() -> bool:
        with db.session() as session:
            return session.scalar(select(Job.status).where(Job.id == job_id)) == "done"

    wait_until(
        done, 120, "the worker to finish the job", lambda: (tmp_path / "worker.log").read_text()
    )
    attempts, closed = recorded(db, job_id)
    assert closed == {("succeeded",): pages}
    assert sum(attempts.values()) == pages
    assert scrape(port, "folio_attempts", "outcome", "engine") == attempts
    assert scrape(port, "folio_pages", "status") == closed


@pytest.mark.parametrize(
    ("pool", "in_process"),
    [("threads", True), ("solo", True), ("prefork", False)],
)
def test_metrics_are_served_only_where_the_tasks_run_in_the_worker_process(
    pool: str, in_process: bool
) -> None:
    assert runs_tasks_in_process(get_implementation(pool)) is in_process


def test_a_prefork_worker_and_port_0_serve_nothing() -> None:
    prefork = get_implementation("prefork")
    threads = get_implementation("threads")
    assert serve_worker_metrics(Settings(worker_metrics_port=free_port()), prefork) is None
    assert serve_worker_metrics(Settings(worker_metrics_port=0), threads) is None


def test_a_worker_whose_port_is_taken_runs_on_without_metrics(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        metrics = serve_worker_metrics(
            Settings(worker_metrics_port=port), get_implementation("threads")
        )
    assert metrics is None
    assert f"port {port} is not free" in caplog.text
