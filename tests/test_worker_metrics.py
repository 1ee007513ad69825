"""A Celery worker's /metrics (workers/metrics.py): real `folio worker` processes on the real
Redis and PostgreSQL run a text-layer job and a VLM job (on the GPU stand-in for vLLM), and
their endpoints count the jobs' attempts, pages and loops as the database records them, and a
finished job's server tokens once."""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from celery.concurrency import get_implementation
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.db.models import Attempt, Job, Page
from app.distributed.queue_view import QueueView
from app.report.build import job_server_tokens
from app.report.metrics import make_metrics
from app.settings import Settings
from tests.api_server import free_port
from tests.conftest import REDIS_URL
from tests.distributed_support import (
    start_worker,
    stop_worker,
    wait_until,
    worker_env,
    write_text_pdfs,
)
from tests.prometheus_stack import serve_env, standin
from tests.vllm_cpu.server import generation_tokens_total
from workers.metrics import FinishedJobTokens, runs_tasks_in_process, serve_worker_metrics

Labels = tuple[str, ...]
MODEL = "allenai/olmOCR-2-7B-1025-FP8"
Worker = Callable[..., tuple[int, dict[str, str]]]


def counted(text: str, name: str, *labels: str) -> Counter[Labels]:
    """The `name` counter's samples in a /metrics page, summed by `labels`."""
    found: Counter[Labels] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == f"{name}_total":
                found[tuple(sample.labels[label] for label in labels)] += int(sample.value)
    return found


def scrape(port: int, name: str, *labels: str) -> Counter[Labels]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return counted(text, name, *labels)


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
def worker(postgres_url: str, prefix: str, tmp_path: Path) -> Iterator[Worker]:
    """Starts a real `folio worker` serving its metrics on a free port: (port, its env)."""
    started = []

    def start(**extra: str) -> tuple[int, dict[str, str]]:
        port = free_port()
        env = worker_env(
            postgres_url, REDIS_URL, prefix, FOLIO_WORKER_METRICS_PORT=str(port), **extra
        )
        started.append(start_worker(env, concurrency=4, log=tmp_path / "worker.log"))
        return port, env

    yield start
    for process in started:
        stop_worker(process)


def run_job(
    folder: Path, env: dict[str, str], db: Database, log: Path, mp: pytest.MonkeyPatch
) -> str:
    """`folio submit` of `folder` to the workers; the job id, once the job is done."""
    for key, value in env.items():
        if key.startswith("FOLIO_"):
            mp.setenv(key, value)
    submitted = CliRunner().invoke(app, ["submit", str(folder)])
    assert submitted.exit_code == 0, submitted.output
    job_id = submitted.stdout.strip().splitlines()[-1]

    def done() -> bool:
        with db.session() as session:
            return session.scalar(select(Job.status).where(Job.id == job_id)) == "done"

    wait_until(done, 180, "the worker to finish the job", lambda: log.read_text()[-3000:])
    return job_id


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_a_worker_serves_the_attempts_and_pages_of_the_job_it_ran(
    worker: Worker, postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port, env = worker()
    pages = write_text_pdfs(tmp_path / "in", documents=2, pages=3)
    db = Database(postgres_url)
    job_id = run_job(tmp_path / "in", env, db, tmp_path / "worker.log", monkeypatch)
    attempts, closed = recorded(db, job_id)
    assert closed == {("succeeded",): pages}
    assert sum(attempts.values()) == pages
    assert scrape(port, "folio_attempts", "outcome", "engine") == attempts
    assert scrape(port, "folio_pages", "status") == closed


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_a_vlm_worker_counts_loops_and_a_finished_jobs_server_tokens_once(
    worker: Worker, postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_text_pdfs(tmp_path / "in", documents=1, pages=8)
    db = Database(postgres_url)
    with standin(free_port(), MODEL, 0.5, tmp_path / "standin.log") as url:
        endpoints = serve_env(postgres_url, url, MODEL, tmp_path)["FOLIO_VLM_ENDPOINTS"]
        port, env = worker(FOLIO_ENGINE="vlm", FOLIO_DPI="72", FOLIO_VLM_ENDPOINTS=endpoints)
        job_id = run_job(tmp_path / "in", env, db, tmp_path / "worker.log", monkeypatch)
        generated_by_server = generation_tokens_total(url)
    attempts, closed = recorded(db, job_id)
    assert sum(closed.values()) == 8
    degenerate = sum(n for (status, _), n in attempts.items() if status == "degenerate")
    assert degenerate > 0, attempts  # the stand-in loops on half the pages
    assert scrape(port, "folio_attempts", "outcome", "engine") == attempts
    assert scrape(port, "folio_pages", "status") == closed
    assert sum(scrape(port, "folio_degenerate_attempts").values()) == degenerate

    # The job's server-side figures, as `folio report` computes them, counted once.
    [figures] = job_server_tokens(db, job_id)
    assert figures.tokens_generated
    assert figures.tokens_generated <= generated_by_server
    served = scrape(port, "folio_server_tokens", "kind", "endpoint")
    assert served[("generated", figures.endpoint)] == figures.tokens_generated
    assert served[("lost_aborts", figures.endpoint)] == (figures.tokens_lost_aborts or 0)
    # Another worker finalizing the same job again (a retry, a second sweep) adds nothing.
    other = make_metrics()
    settings = Settings(broker_url=REDIS_URL, queue_prefix=env["FOLIO_QUEUE_PREFIX"])
    FinishedJobTokens(other, db, QueueView(settings)).count(job_id)
    assert not counted(generate_latest(other.registry).decode(), "folio_server_tokens")


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
