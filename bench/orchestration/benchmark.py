"""Orchestration cost of distributed mode: Celery + Redis + PostgreSQL with a no-op engine.

Run `python -m bench orchestration [--documents 10 --pages 50 --workers 2 --concurrency 4]`
from the repository root with the local PostgreSQL and Redis up (FOLIO_TEST_POSTGRES_URL,
FOLIO_TEST_REDIS_URL). The engine is the PDF text layer on tiny text pages rendered at 36 dpi,
so nearly all the time measured is Folio's own: queueing, claiming, recording, finalizing.

Three arms in one run, each on its own database and queue prefix: `current` (this tree, the
CPU queue's pages in groups of `pages_per_task`), `one_per_task` (this tree with
FOLIO_PAGES_PER_TASK=1: one page a task, as the GPU queue runs) and `baseline` (the page path
before issue 16, commit --baseline, exported with `git archive`).
Their workers run `bench/orchestration/count_worker.py`, which counts every statement, BEGIN,
COMMIT and pool ping the workers send, with SQLAlchemy events: the per-page counts do not
depend on load.

Reported per arm: pages/s (job created to job done, workers already warm; the spread across
`--repeats` too), CPU milliseconds per page of the worker processes and of the PostgreSQL
backends serving the arm's database (from /proc: far less sensitive to the machine's load than
any wall time, so the number to compare on a shared machine), the median in-worker overhead per
page (a task's time in its worker, claim to last close, minus its pages' rendering and engine
time, shared equally by its pages) and database round trips and commits per page (all worker
traffic during the batch, split and finalize tasks included, divided by pages). Written to
`bench/results/orchestration.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import redis
from rich.console import Console
from rich.table import Table
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from bench.environment import machine_info, run_folio
from tests.conftest import POSTGRES_URL, REDIS_URL
from tests.distributed_support import stop_worker, wait_until, worker_env, write_text_pdfs

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results" / "orchestration.json"
BASELINE = "5866c15"  # main before issue 16: the page path this work replaced
TARGETS = {
    "pages_per_s": 300.0,
    "overhead_ms_median": 10.0,
    "round_trips_per_page": 6.0,
    "commits_per_page": 2.0,
}
ROUND_TRIP_KINDS = ("statements", "begins", "commits", "pings")
ARM_ORDER = ("baseline", "one_per_task", "current")


def versions() -> dict[str, str]:
    found = {name: version(name) for name in ("celery", "kombu", "redis", "sqlalchemy", "psycopg")}
    with create_engine(POSTGRES_URL).connect() as conn:
        found["postgresql"] = str(conn.execute(text("SHOW server_version")).scalar())
    found["redis-server"] = str(redis.Redis.from_url(REDIS_URL).info()["redis_version"])
    return found


def export_tree(revision: str, into: Path) -> Path:
    """The repository at `revision` as plain files (no .git), for the baseline arm's workers."""
    archive = into / "baseline.tar"
    try:
        with archive.open("wb") as out:
            subprocess.run(["git", "-C", str(REPO), "archive", revision], stdout=out, check=True)
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        raise SystemExit(
            f"cannot export baseline {revision!r} with git archive ({exc}); "
            "run from a clone that has it, or pass --baseline none"
        ) from exc
    tree = into / f"baseline-{revision}"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc); 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Arm:
    """One side of the comparison: a source tree, its own database, queues and workers."""

    def __init__(
        self, name: str, tree: Path, scratch: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.tree = tree
        self.scratch = scratch
        self.database = f"folio_bench_{uuid.uuid4().hex[:10]}"
        self.prefix = f"folio-bench-{uuid.uuid4().hex[:8]}"
        self.url = make_url(POSTGRES_URL).set(database=self.database)
        self.url_text = self.url.render_as_string(hide_password=False)
        self.env = {**worker_env(self.url_text, REDIS_URL, self.prefix), "PYTHONPATH": str(tree)}
        self.env.update(env or {})
        self.workers: list[subprocess.Popen[bytes]] = []
        self.counts = [scratch / f"{self.name}-{i}.json" for i in range(64)]
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = create_engine(self.url_text)
        return self._engine

    def folio(self, *args: str) -> str:
        """Run this tree's `folio` CLI; its standard output."""
        return run_folio(args, self.env, self.tree, f"{self.name}: ")

    def start(self, workers: int, concurrency: int) -> None:
        self.folio("db", "upgrade")
        queues = f"{self.prefix}.cpu,{self.prefix}.gpu"
        for i in range(workers):
            command = [
                sys.executable,
                str(REPO / "bench" / "orchestration" / "count_worker.py"),
                str(self.counts[i]),
            ]
            command += ["worker", "-Q", queues, "-P", "threads", "-c", str(concurrency)]
            command += ["-l", "WARNING", "-n", f"{self.name}{i}-{self.prefix}@%h"]
            command += ["--without-gossip", "--without-mingle"]
            log = (self.scratch / f"{self.name}-{i}.log").open("ab")
            self.workers.append(
                subprocess.Popen(command, env=self.env, cwd=self.tree, stdout=log, stderr=log)
            )

    def run_job(self, folder: Path) -> str:
        job_id = self.folio("submit", str(folder), "--dpi", "36").strip().splitlines()[-1]

        def done() -> bool:
            with self.engine.connect() as conn:
                status = conn.scalar(text("SELECT status FROM jobs WHERE id = :j"), {"j": job_id})
            return status == "done"

        wait_until(done, 600, f"the {self.name} job")
        return job_id

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time (user + system) used so far by this arm's worker processes and by the
        PostgreSQL backends serving its database: far less sensitive to load than wall time."""
        with self.engine.connect() as conn:
            backends = list(
                conn.scalars(
                    text("SELECT pid FROM pg_stat_activity WHERE datname = :d"),
                    {"d": self.database},
                )
            )
        return {
            "workers": sum(process_cpu_s(w.pid) for w in self.workers),
            "postgres": sum(process_cpu_s(pid) for pid in backends),
        }

    def counted(self) -> Counter[str]:
        """Database traffic of all this arm's workers so far."""
        time.sleep(0.5)  # the counters are written every 0.2 s
        total: Counter[str] = Counter()
        for path in self.counts[: len(self.workers)]:
            if path.exists():
                total.update(json.loads(path.read_text(encoding="utf-8")))
        return total

    def job_timings(self, job_id: str) -> tuple[float, list[float]]:
        """(seconds from job created to done, per-page in-worker overhead in ms).

        A task's overhead is its time in the worker, claim to last close, minus the rendering
        and engine time of its pages; each of its pages is given an equal share. Pages of one
        task were claimed together: same document, same `started_at`. A task of one page (the
        baseline's, the GPU queue's) is just that page's claim-to-close time minus its own."""
        with self.engine.connect() as conn:
            seconds = conn.scalar(
                text("SELECT EXTRACT(EPOCH FROM finished_at - created_at) FROM jobs WHERE id = :j"),
                {"j": job_id},
            )
            rows = conn.execute(
                text(
                    "SELECT count(*), EXTRACT(EPOCH FROM max(p.finished_at) - p.started_at),"
                    " sum(p.render_s),"
                    " sum((SELECT sum(a.duration_s) FROM attempts a WHERE a.page_id = p.id))"
                    " FROM pages p WHERE p.job_id = :j GROUP BY p.document_id, p.started_at"
                ),
                {"j": job_id},
            ).all()
        overhead = [
            (float(span) - (render or 0.0) - (engine or 0.0)) * 1000 / pages
            for pages, span, render, engine in rows
            for _ in range(pages)
        ]
        return float(seconds), overhead

    def page_cost(self, folder: Path) -> dict[str, Any]:
        """This tree's pages processed one at a time in one thread
        (bench/orchestration/page_cost.py)."""
        script = str(REPO / "bench" / "orchestration" / "page_cost.py")
        done = subprocess.run(
            [sys.executable, script, self.url_text, str(folder)],
            env=self.env,
            cwd=self.tree,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: page_cost failed:\n{done.stderr}")
        measured = json.loads(done.stdout.strip().splitlines()[-1])
        pages = measured["pages"]
        traffic = Counter(measured["traffic"])
        return {
            "pages": pages,
            "overhead_ms_median": round(statistics.median(measured["overhead_ms"]), 2),
            "round_trips_per_page": round(sum(traffic[k] for k in ROUND_TRIP_KINDS) / pages, 2),
            "statements_per_page": round(traffic["statements"] / pages, 2),
            "commits_per_page": round(traffic["commits"] / pages, 2),
        }

    def stop(self) -> None:
        for process in self.workers:
            stop_worker(process)
        if self._engine is not None:
            self._engine.dispose()
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{self.prefix}:*"))
        if keys:
            client.delete(*keys)
        admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)'))
        admin.dispose()


def measure_arm(arm: Arm, inputs: Path, workers: int, concurrency: int) -> dict[str, Any]:
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{arm.database}"'))
    admin.dispose()
    try:
        arm.start(workers, concurrency)
        arm.run_job(inputs / "warmup")
        before = arm.counted()
        cpu_before = arm.cpu_seconds()  # backends that exit meanwhile are missed: pools keep them
        job_id = arm.run_job(inputs / "batch")
        cpu_after = arm.cpu_seconds()
        traffic = arm.counted() - before
        seconds, overhead = arm.job_timings(job_id)
        single = arm.page_cost(inputs / "single")
    finally:
        arm.stop()
    pages = len(overhead)
    per_page = {kind: round(traffic[kind] / pages, 2) for kind in ROUND_TRIP_KINDS}
    return {
        "pages": pages,
        "seconds": round(seconds, 3),
        "pages_per_s": round(pages / seconds, 1),
        "overhead_ms_median": round(statistics.median(overhead), 2),
        "overhead_ms_p90": round(statistics.quantiles(overhead, n=10)[-1], 2),
        "per_page": per_page,
        "round_trips_per_page": round(sum(per_page.values()), 2),
        "commits_per_page": per_page["commits"],
        "statements_per_page_by_kind": {
            kind[5:]: round(n / pages, 3)
            for kind, n in sorted(traffic.items())
            if kind.startswith("stmt:") and n
        },
        "cpu_ms_per_page": {
            kind: round(1000 * (cpu_after[kind] - cpu_before[kind]) / pages, 2)
            for kind in cpu_after
        },
        "one_thread": single,
    }


def measure(
    documents: int, pages: int, workers: int, concurrency: int, baseline: str | None, repeats: int
) -> dict[str, list[dict[str, Any]]]:
    """Each arm `repeats` times, alternating which goes first (AB, BA, ...)."""
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        write_text_pdfs(scratch / "in" / "warmup", 1, workers * concurrency)
        write_text_pdfs(scratch / "in" / "batch", documents, pages)
        write_text_pdfs(scratch / "in" / "single", 1, 101)
        # The current tree twice: one page a task (as the GPU queue runs), and in groups.
        arms: dict[str, tuple[Path, dict[str, str]]] = {
            "one_per_task": (REPO, {"FOLIO_PAGES_PER_TASK": "1"}),
            "current": (REPO, {}),
        }
        if baseline:
            arms = {"baseline": (export_tree(baseline, scratch), {}), **arms}
        for repeat in range(repeats):
            names = list(arms) if repeat % 2 == 0 else list(reversed(arms))
            for name in names:
                tree, env = arms[name]
                arm = Arm(name, tree, scratch, env)
                results.setdefault(name, []).append(
                    measure_arm(arm, scratch / "in", workers, concurrency)
                )
    return results


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median of the repeats for timings; counts are the same in every run up to retries."""
    middle = {
        key: round(statistics.median(run[key] for run in runs), 2)
        for key in ("pages_per_s", "overhead_ms_median", "overhead_ms_p90")
    }
    one_thread = {
        **runs[-1]["one_thread"],
        "overhead_ms_median": round(
            statistics.median(run["one_thread"]["overhead_ms_median"] for run in runs), 2
        ),
    }
    cpu = {
        kind: round(statistics.median(run["cpu_ms_per_page"][kind] for run in runs), 2)
        for kind in runs[-1]["cpu_ms_per_page"]
    }
    spread = [min(run["pages_per_s"] for run in runs), max(run["pages_per_s"] for run in runs)]
    return {
        **runs[-1],
        **middle,
        "cpu_ms_per_page": cpu,
        "pages_per_s_range": spread,
        "one_thread": one_thread,
        "runs": len(runs),
    }


ROWS = (
    ("pages/s", "pages_per_s", ">= {:g}"),
    ("in-worker overhead ms/page (median)", "overhead_ms_median", "< {:g}"),
    ("in-worker overhead ms/page (p90)", "overhead_ms_p90", ""),
    ("DB round trips/page", "round_trips_per_page", "<= {:g}"),
    ("  statements/page", "statements", ""),
    ("  BEGINs/page", "begins", ""),
    ("  COMMITs/page", "commits", "<= {:g}"),
    ("  pool pings/page", "pings", ""),
    ("CPU ms/page, worker processes", "cpu_workers", ""),
    ("CPU ms/page, PostgreSQL backends", "cpu_postgres", ""),
)


def print_report(console: Console, report: dict[str, Any]) -> None:
    console.print(f"Machine: {report['machine']}")
    console.print(f"Versions: {report['versions']}")
    result = report["result"]
    setup = result["setup"]
    table = Table(
        title=f"Distributed orchestration, {setup['pages']} pages, {setup['workers']} workers x "
        f"{setup['concurrency_per_worker']} threads (Celery + Redis + PostgreSQL, no-op engine)"
    )
    table.add_column("metric")
    arms = [name for name in ARM_ORDER if name in result["arms"]]
    for name in arms:
        table.add_column(name, justify="right")
    table.add_column("target")
    targets: dict[str, float] = {**TARGETS, "commits": TARGETS["commits_per_page"]}
    for label, key, target in ROWS:
        values = []
        for name in arms:
            arm = result["arms"][name]
            cpu = {f"cpu_{k}": v for k, v in arm.get("cpu_ms_per_page", {}).items()}
            flat = {**arm, **arm["per_page"], **cpu}
            values.append(str(flat.get(key, "-")))
        table.add_row(label, *values, target.format(targets[key]) if target else "")
    console.print(table)
    single = Table(title="The same page path, one page at a time in one thread, no Celery")
    single.add_column("metric")
    for name in arms:
        single.add_column(name, justify="right")
    for label, key in (
        ("overhead ms/page (median)", "overhead_ms_median"),
        ("DB round trips/page", "round_trips_per_page"),
        ("statements/page", "statements_per_page"),
        ("COMMITs/page", "commits_per_page"),
    ):
        single.add_row(label, *(str(result["arms"][n]["one_thread"][key]) for n in arms))
    console.print(single)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 documents of 25 pages.")
    parser.add_argument("--documents", type=int, default=10)
    parser.add_argument("--pages", type=int, default=50, help="Pages per document.")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="Threads per worker.")
    parser.add_argument("--repeats", type=int, default=1, help="Runs per arm (ABBA order).")
    parser.add_argument(
        "--baseline",
        default=BASELINE,
        help="Commit whose page path is the baseline arm; 'none' measures this tree only.",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.documents, args.pages = 2, 25
    baseline = None if args.baseline == "none" else args.baseline
    console = Console()
    load_before = os.getloadavg()[0]
    with console.status("Running the batch through Celery workers, arm by arm..."):
        runs = measure(
            args.documents, args.pages, args.workers, args.concurrency, baseline, args.repeats
        )
    report = {
        # Other work on the machine skews the timings (not the counts); the load says how much.
        "machine": {
            **machine_info(),
            "load_average_1m_before": round(load_before, 2),
            "load_average_1m_after": round(os.getloadavg()[0], 2),
        },
        "versions": versions(),
        "targets": TARGETS,
        "result": {
            "setup": {
                "pages": args.documents * args.pages,
                "workers": args.workers,
                "concurrency_per_worker": args.concurrency,
                "baseline_commit": baseline,
            },
            "arms": {name: summarise(arm_runs) for name, arm_runs in runs.items()},
            "runs": runs,
        },
    }
    print_report(console, report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"Written to {RESULTS.relative_to(REPO)}")
    return report


if __name__ == "__main__":
    main()
