"""The console's two big reads, timed on the server: the jobs list of a key with 10,000 jobs
(each with its report's figures) and the pages table of a 2,000-page job (sorted by cost), on
the embedded default (SQLite).

Run `python -m bench console [--quick]`. The database is seeded with rows as Folio writes them
(each job: one document of 2 pages, a looping greedy read and a healthy retry on one page, one
healthy read on the other; the big job: 20 documents of 100 pages, one page in ten looping
first, outputs of ~1,500 characters); then each route is asked `--rounds` times in process
(Starlette's test client: no network, so the time is the server's), the median and the
slowest reported. The target (issue 63) is 300 ms a page of either."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import insert

from app.api.app import create_app
from app.db import keys
from app.db.engine import Database
from app.db.models import Attempt, Document, Job, Page
from app.settings import Settings
from bench.environment import describe, machine_info, write_results

TARGET_MS = 300.0
HEALTHY = "| 2024-03-01 | Opening balance | 4,210.00 |\n" * 30
LOOPING = HEALTHY[:400] + "| 2024-03-02 | Payment received | 120.00 |\n" * 25
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _attempt(job: str, page: int, step: int, looped: bool, at: datetime) -> dict[str, Any]:
    output = LOOPING if looped else HEALTHY
    return {
        "job_id": job,
        "page_id": page,
        "step_index": step,
        "step_name": "greedy" if step == 0 else "retry",
        "engine": "vlm",
        "model": "bench-model",
        "endpoint": "primary",
        "params": {"temperature": 0.0 if step == 0 else 0.2, "max_tokens": 4096},
        "status": "degenerate" if looped else "ok",
        "started_at": at,
        "ended_at": at + timedelta(seconds=2),
        "duration_s": 2.0,
        "prompt_tokens": 1200,
        "completion_tokens": len(output) // 4,
        "verdict_kind": "line" if looped else None,
        "verdict_period": 44 if looped else None,
        "verdict_onset": 400 if looped else None,
        "output": output,
        "output_chars": len(output),
    }


def seed_job(
    session: Any, key: int, job_id: str, docs: int, pages: int, every: int, at: datetime
) -> None:
    """A finished job of `docs` documents of `pages` pages; one page in `every` loops first."""
    session.execute(
        insert(Job),
        [
            {
                "id": job_id,
                "created_at": at,
                "started_at": at,
                "finished_at": at + timedelta(minutes=5),
                "status": "done",
                "source": "bench",
                "plan_name": "vlm",
                "options": {},
                "api_key_id": key,
            }
        ],
    )
    for d in range(docs):
        doc = session.execute(
            insert(Document).returning(Document.id),
            [
                {
                    "job_id": job_id,
                    "path": f"/bench/{d}.pdf",
                    "name": f"doc-{d:03d}",
                    "status": "done",
                    "page_count": pages,
                }
            ],
        ).scalar_one()
        page_rows = [
            {
                "job_id": job_id,
                "document_id": doc,
                "number": n + 1,
                "status": "succeeded",
                "final_engine": "vlm",
                "final_step": "greedy",
                "text": HEALTHY,
            }
            for n in range(pages)
        ]
        ids = list(session.execute(insert(Page).returning(Page.id), page_rows).scalars())
        attempts = []
        for i, page_id in enumerate(ids):
            when = at + timedelta(seconds=2 * (d * pages + i))
            looped = (d * pages + i) % every == 0
            attempts.append(_attempt(job_id, page_id, 0, looped, when))
            if looped:
                attempts.append(_attempt(job_id, page_id, 1, False, when + timedelta(seconds=2)))
        session.execute(insert(Attempt), attempts)


def seed(db: Database, jobs: int, big_pages: int) -> tuple[str, str]:
    """The key's token and the big job's id, after writing `jobs` small jobs and the big one."""
    with db.session() as session:
        info, token = keys.create_key(session, "bench")
    for chunk in range(0, jobs, 500):
        with db.session() as session:
            for n in range(chunk, min(jobs, chunk + 500)):
                seed_job(session, info.id, f"job{n:028d}", 1, 2, 2, T0 + timedelta(minutes=n))
    big = "big" + "0" * 29
    with db.session() as session:
        seed_job(session, info.id, big, 20, big_pages // 20, 10, T0 - timedelta(days=1))
    return token, big


def timed(client: TestClient, path: str, rounds: int) -> dict[str, Any]:
    """Wall and CPU milliseconds of `rounds` requests (after one to warm caches). CPU is the
    process's (the server's thread and the in-process client's, a few ms): on a shared
    machine the wall time grows with the load, the CPU time much less."""
    client.get(path)
    wall, cpu = [], []
    for _ in range(rounds):
        began, began_cpu = time.perf_counter(), time.process_time()
        answer = client.get(path)
        wall.append(1000 * (time.perf_counter() - began))
        cpu.append(1000 * (time.process_time() - began_cpu))
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
    return {
        "path": path,
        "median_ms": round(statistics.median(wall), 1),
        "max_ms": round(max(wall), 1),
        "cpu_median_ms": round(statistics.median(cpu), 1),
        "bytes": len(answer.content),
    }


def measure(jobs: int, big_pages: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=f"sqlite:///{Path(tmp) / 'bench.db'}", data_dir=Path(tmp))
        began = time.perf_counter()
        token, big = seed(Database(settings.database_url), jobs, big_pages)
        seeded_s = time.perf_counter() - began
        with TestClient(create_app(settings)) as client:
            client.post("/console/sign-in", data={"token": token})
            api = {"Authorization": f"Bearer {token}"}
            last = (jobs // 25) * 25
            table = f"/console/jobs/{big}/pages"
            reads = {
                "console jobs, first page": "/console/jobs",
                "console jobs, last page": f"/console/jobs?offset={last}",
                "console pages table by cost": f"{table}?sort=cost&descending=true",
                "console pages table, last page": f"{table}?offset={big_pages - 50}",
                "console job page (report, charts)": f"/console/jobs/{big}",
            }
            results = {name: timed(client, path, rounds) for name, path in reads.items()}
            client.headers.update(api)
            results["API jobs with figures"] = timed(
                client, "/v1/jobs?figures=true&limit=25", rounds
            )
            results["API pages by cost"] = timed(
                client, f"/v1/jobs/{big}/pages?sort=cost&descending=true&limit=50", rounds
            )
    return {
        "jobs": jobs,
        "big_job_pages": big_pages,
        "rounds": rounds,
        "seed_s": round(seeded_s, 1),
        "target_ms": TARGET_MS,
        "reads": results,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench console", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1,000 jobs, a 200-page job.")
    parser.add_argument("--rounds", type=int, default=5, help="Times each page is asked.")
    args = parser.parse_args(argv)
    jobs, pages = (1_000, 200) if args.quick else (10_000, 2_000)
    info = machine_info(packages=("fastapi", "starlette", "jinja2", "sqlalchemy"))
    print(describe(info))
    report = {"machine": info, **measure(jobs, pages, args.rounds)}
    report["load_after"] = [round(x, 2) for x in os.getloadavg()]
    for name, row in report["reads"].items():
        print(
            f"{name:34} wall median {row['median_ms']:7.1f} ms (max {row['max_ms']:7.1f})"
            f"  CPU median {row['cpu_median_ms']:7.1f} ms"
        )
    if not args.quick:
        write_results("console", report)
    return report
