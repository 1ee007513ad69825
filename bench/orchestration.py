"""Orchestration overhead of distributed mode: Celery + Redis + PostgreSQL with a no-op engine.

Run `python -m bench.orchestration [--documents 10 --pages 50 --workers 2 --concurrency 4]`
from the repository root with the local PostgreSQL and Redis up (FOLIO_TEST_POSTGRES_URL,
FOLIO_TEST_REDIS_URL). The engine is the PDF text layer on tiny text pages rendered at 36 dpi,
so nearly all the time measured is Folio's own: queueing, claiming, recording, finalizing.

Reported: pages/s from submit to the job marked done (workers already warm), and the median
per-page overhead: a page's time in its worker (claim to close) minus rendering and engine
time. Results are printed and written to `bench/results/orchestration.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import redis
from rich.console import Console
from rich.table import Table
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url

from app.db.engine import Database, dispose_engines, upgrade
from app.db.models import Attempt, Job, Page
from app.jobs import JobRequest
from app.queue import Enqueuer
from app.settings import Settings
from bench.detector import machine_info
from tests.conftest import POSTGRES_URL, REDIS_URL
from tests.distributed_support import (
    start_worker,
    stop_worker,
    wait_until,
    worker_env,
    write_text_pdfs,
)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "orchestration.json"
TARGETS = {"pages_per_s": 100.0, "overhead_ms_median": 10.0}


def versions() -> dict[str, str]:
    found = {name: version(name) for name in ("celery", "kombu", "redis", "sqlalchemy", "psycopg")}
    with create_engine(POSTGRES_URL).connect() as conn:
        found["postgresql"] = str(conn.execute(text("SHOW server_version")).scalar())
    found["redis-server"] = str(redis.Redis.from_url(REDIS_URL).info()["redis_version"])
    return found


def run_batch(settings: Settings, folder: Path) -> tuple[str, float]:
    """Submit the folder and wait for the job to be done; (job id, seconds)."""
    from app.distributed import submit_job

    db = Database(settings.database_url)
    started = time.perf_counter()
    request = JobRequest(folder, None, "textlayer", dpi=36)
    job_id = submit_job(settings, db, Enqueuer(settings), request).job_id

    def done() -> bool:
        with db.session() as session:
            return session.scalar(select(Job.status).where(Job.id == job_id)) == "done"

    wait_until(done, 600, "the benchmark job")
    return job_id, time.perf_counter() - started


def per_page_overhead_ms(db: Database, job_id: str) -> list[float]:
    engine_s = (
        select(Attempt.page_id, func.sum(Attempt.duration_s).label("s"))
        .group_by(Attempt.page_id)
        .subquery()
    )
    query = (
        select(Page.started_at, Page.finished_at, Page.render_s, engine_s.c.s)
        .join(engine_s, engine_s.c.page_id == Page.id)
        .where(Page.job_id == job_id)
    )
    with db.session() as session:
        rows = session.execute(query).all()
    return [
        ((end - start).total_seconds() - (render or 0.0) - (spent or 0.0)) * 1000
        for start, end, render, spent in rows
    ]


def measure(documents: int, pages: int, workers: int, concurrency: int) -> dict[str, Any]:
    name = f"folio_bench_{uuid.uuid4().hex[:10]}"
    prefix = f"folio-bench-{uuid.uuid4().hex[:8]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    processes = []
    try:
        upgrade(url)
        env = worker_env(url, REDIS_URL, prefix)
        settings = Settings(database_url=url, broker_url=REDIS_URL, queue_prefix=prefix)
        processes = [start_worker(env, concurrency) for _ in range(workers)]
        with tempfile.TemporaryDirectory() as tmp:
            write_text_pdfs(Path(tmp) / "warmup", 1, workers * concurrency)
            total = write_text_pdfs(Path(tmp) / "batch", documents, pages)
            run_batch(settings, Path(tmp) / "warmup")
            job_id, seconds = run_batch(settings, Path(tmp) / "batch")
        overhead = per_page_overhead_ms(Database(url), job_id)
    finally:
        for process in processes:
            stop_worker(process)
        dispose_engines()
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{prefix}:*"))
        if keys:
            client.delete(*keys)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return {
        "pages": total,
        "workers": workers,
        "concurrency_per_worker": concurrency,
        "seconds": round(seconds, 3),
        "pages_per_s": round(total / seconds, 1),
        "overhead_ms_median": round(statistics.median(overhead), 2),
        "overhead_ms_p90": round(statistics.quantiles(overhead, n=10)[-1], 2),
    }


def print_report(console: Console, report: dict[str, Any]) -> None:
    console.print(f"Machine: {report['machine']}")
    console.print(f"Versions: {report['versions']}")
    result = report["result"]
    table = Table(title="Distributed orchestration (Celery + Redis + PostgreSQL, no-op engine)")
    for column in ("metric", "value", "target"):
        table.add_column(column)
    for key in ("pages", "workers", "concurrency_per_worker", "seconds"):
        table.add_row(key, str(result[key]), "")
    table.add_row("pages/s", str(result["pages_per_s"]), f">= {TARGETS['pages_per_s']:g}")
    table.add_row(
        "overhead ms/page (median)",
        str(result["overhead_ms_median"]),
        f"< {TARGETS['overhead_ms_median']:g}",
    )
    table.add_row("overhead ms/page (p90)", str(result["overhead_ms_p90"]), "")
    console.print(table)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 documents of 25 pages.")
    parser.add_argument("--documents", type=int, default=10)
    parser.add_argument("--pages", type=int, default=50, help="Pages per document.")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="Threads per worker.")
    args = parser.parse_args(argv)
    if args.quick:
        args.documents, args.pages = 2, 25
    console = Console()
    with console.status("Running the batch through Celery workers..."):
        result = measure(args.documents, args.pages, args.workers, args.concurrency)
    report = {
        # Other work on the machine skews these numbers; the load average says how much.
        "machine": {**machine_info(), "load_average_1m": round(os.getloadavg()[0], 2)},
        "versions": versions(),
        "targets": TARGETS,
        "result": result,
    }
    print_report(console, report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"Written to {RESULTS.relative_to(REPO)}")
    return report


if __name__ == "__main__":
    main()
