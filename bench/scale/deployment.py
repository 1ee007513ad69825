"""One arm of the scale benchmark as a real distributed deployment: its own PostgreSQL database
and queue prefix, one GPU stand-in per GPU (`bench.vllm_standin`), one GPU worker per GPU beside
it (as a GPU box runs `folio worker --queues gpu`, here `stage_worker.py`, which also keeps its
CPU by stage) and one CPU worker (splits documents, finalizes jobs), all real processes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import redis
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.profiles import resolve_profile
from app.settings import builtin_vlm_plan
from bench.environment import run_folio
from bench.orchestration.benchmark import process_cpu_s
from tests.conftest import POSTGRES_URL, REDIS_URL
from tests.distributed_support import stop_worker, wait_until, worker_env

REPO = Path(__file__).resolve().parents[2]
MODEL = "allenai/olmOCR-2-7B-1025-FP8"
PROFILE = "olmocr2"


@dataclass(frozen=True)
class Loops:
    """What a stand-in draws: the share of pages that loop, and of those the shares that loop
    again on every read, at the same place on the same unit (sticky) or elsewhere (moving)."""

    rate: float
    sticky: float = 0.0
    moving: float = 0.0

    def arguments(self) -> list[str]:
        return [
            *("--loop-rate", str(self.rate)),
            *("--sticky-share", str(self.sticky), "--moving-share", str(self.moving)),
        ]


@dataclass(frozen=True)
class Arm:
    key: str
    title: str
    loops: Loops
    client_detector: bool = True  # Folio's own loop detector in the worker
    # the endpoint's server_repetition_detection; None: Folio's default (off, since 2026-11-26)
    server_repetition: bool | str | None = None
    # the built-in plan's VLM retries resume past the loop (`resume_after_loop`), not re-read
    resume_after_loop: bool = False


@dataclass(frozen=True)
class Setup:
    gpus: int
    gpu: str = "h100"
    shape: str = "7b"
    slowdown: float = 1.0
    threads_per_gpu: int = 320  # pages a GPU worker has in flight: more than the 256 slots
    max_num_seqs: int = 256
    max_tokens: int | None = None  # the endpoint's token cap; None: the profile's (8,000)
    warm: bool = True  # a small job first, so the measured one finds the processes warm
    poll_s: float = 0.1  # how often the job's progress is read (each reading costs CPU)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def migrated_template() -> str:
    """A database migrated once (`folio db upgrade`), which each arm's database copies."""
    name = f"folio_scale_template_{uuid.uuid4().hex[:8]}"
    _admin(f'CREATE DATABASE "{name}"')
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    env = worker_env(url, REDIS_URL, "folio-scale-template")
    env["PYTHONPATH"] = str(REPO)
    run_folio(("db", "upgrade"), env, REPO)
    return name


def drop_database(name: str) -> None:
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _admin(statement: str) -> None:
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(statement))
    admin.dispose()


def arm_settings(arm: Arm, setup: Setup, base_url: str) -> dict[str, str]:
    """The settings (FOLIO_ variables) that make a GPU worker `arm`'s pipeline, reading the
    stand-in at `base_url`: its endpoint's stops, for an arm without Folio's detector
    `detector_online` off (the server's stop alone), for a resuming arm the built-in plans with
    `resume_after_loop` on its VLM steps (tests/test_bench_scale_arms.py)."""
    endpoint: dict[str, Any] = {
        "base_url": base_url,
        "model": MODEL,
        "profile": PROFILE,
        "max_concurrency": setup.threads_per_gpu,
        "engine_plugin": False,
        "abort_call": False,
    }
    if arm.server_repetition is not None:
        endpoint["server_repetition_detection"] = arm.server_repetition
    if setup.max_tokens:
        endpoint["max_tokens"] = setup.max_tokens
    found = {"FOLIO_VLM_ENDPOINTS": json.dumps({"primary": endpoint})}
    if not arm.client_detector:
        found["FOLIO_DETECTOR_ONLINE"] = "false"
    if arm.resume_after_loop:
        found["FOLIO_PLANS"] = json.dumps(resuming_plans())
    return found


def resuming_plans() -> dict[str, list[dict[str, Any]]]:
    """Folio's built-in plans for the bench's profile, its VLM steps resuming past a loop."""
    vlm = builtin_vlm_plan(resolve_profile(PROFILE, MODEL))
    steps = [s.model_copy(update={"resume_after_loop": s.engine == "vlm"}) for s in vlm]
    simple = {name: [{"name": name, "engine": name}] for name in ("textlayer", "tesseract")}
    auto = [*simple["textlayer"], *simple["tesseract"]]
    return {"auto": auto, **simple, "vlm": [s.model_dump(exclude_none=True) for s in steps]}


def standin_command(port: int, setup: Setup, loops: Loops) -> list[str]:
    """The GPU stand-in for one GPU of `setup`, on `port`, drawing `loops`."""
    command = [sys.executable, "-m", "bench.vllm_standin", "--port", str(port)]
    command += ["--gpu", setup.gpu, "--shape", setup.shape, "--model", MODEL, "--profile", PROFILE]
    command += [*loops.arguments(), "--slowdown", str(setup.slowdown)]
    command += ["--max-num-seqs", str(setup.max_num_seqs)]
    return command


def start_standin(
    port: int, setup: Setup, loops: Loops, log: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """The stand-in of `standin_command`, its output appended to `log`."""
    command = standin_command(port, setup, loops)
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=out)


def standin_stats(port: int) -> dict[str, Any]:
    """The stand-in's own counters (its /standin/stats)."""
    return dict(httpx.get(f"http://127.0.0.1:{port}/standin/stats", timeout=30).json())


class Deployment:
    def __init__(self, arm: Arm, setup: Setup, scratch: Path, template: str | None = None) -> None:
        self.arm, self.setup, self.scratch = arm, setup, scratch
        self.template = template  # a migrated database to copy, else migrated here
        self.database = f"folio_scale_{uuid.uuid4().hex[:10]}"
        self.prefix = f"folio-scale-{uuid.uuid4().hex[:8]}"
        self.url = make_url(POSTGRES_URL).set(database=self.database)
        self.url_text = self.url.render_as_string(hide_password=False)
        self.ports = [free_port() for _ in range(setup.gpus)]
        self.standins: list[subprocess.Popen[bytes]] = []
        self.gpu_workers: list[subprocess.Popen[bytes]] = []
        self.cpu_worker: subprocess.Popen[bytes] | None = None
        self.stats_files = [scratch / f"{arm.key}-{self.prefix}-{i}.json" for i in self.ports]
        self.engine = create_engine(self.url_text)
        self.backend_cpu: dict[int, float] = {}

    # --- processes
    def env(self, port: int | None = None) -> dict[str, str]:
        env = worker_env(self.url_text, REDIS_URL, self.prefix, FOLIO_ENGINE="vlm")
        env.pop("FOLIO_DPI")  # the default (200), as a deployment has it
        env["PYTHONPATH"] = str(REPO)
        if port is not None:
            env |= arm_settings(self.arm, self.setup, f"http://127.0.0.1:{port}/v1")
        return env

    def start(self) -> None:
        if self.template:
            _admin(f'CREATE DATABASE "{self.database}" TEMPLATE "{self.template}"')
        else:
            _admin(f'CREATE DATABASE "{self.database}"')
            self.folio("db", "upgrade")
        for port in self.ports:
            self.standins.append(self._standin(port))
        for port, stats in zip(self.ports, self.stats_files, strict=True):
            wait_until(partial(_healthy, port), 120, "a GPU stand-in")
            self.gpu_workers.append(self._worker("gpu", self.setup.threads_per_gpu, port, stats))
        self.cpu_worker = self._worker("cpu", 4, None, None)

    def _standin(self, port: int) -> subprocess.Popen[bytes]:
        log = self.scratch / f"standin-{port}.log"
        return start_standin(port, self.setup, self.arm.loops, log, self.env())

    def _worker(
        self, queue: str, threads: int, port: int | None, stats: Path | None
    ) -> subprocess.Popen[bytes]:
        head = [sys.executable, str(REPO / "bench" / "scale" / "stage_worker.py"), str(stats)]
        command = head if stats else [sys.executable, "-m", "workers"]
        command += ["worker", "-Q", f"{self.prefix}.{queue}", "-P", "threads", "-c", str(threads)]
        command += ["-l", "WARNING", "-n", f"{queue}{port or ''}-{self.prefix}@%h"]
        command += ["--without-gossip", "--without-mingle"]
        log = (self.scratch / f"worker-{self.prefix}-{queue}{port or ''}.log").open("ab")
        return subprocess.Popen(command, cwd=REPO, env=self.env(port), stdout=log, stderr=log)

    def folio(self, *args: str) -> str:
        return run_folio(args, self.env(self.ports[0]), REPO)

    # --- a job
    def run_job(self, folder: Path, timeout_s: float) -> str:
        """Submit the folder and wait for its job; `drained` is then when no page of it was
        left in Folio's queue (the last one claimed) and the stand-ins' figures then, `filled`
        when every slot of every stand-in was first busy before that (None: never)."""
        self.submitted_at = time.time()
        self.drained: tuple[float, list[dict[str, Any]]] | None = None
        self.filled: tuple[float, list[dict[str, Any]]] | None = None  # every slot busy
        job_id = self.folio("submit", str(folder), "--engine", "vlm").strip().splitlines()[-1]

        def done() -> bool:
            time.sleep(max(0.0, self.setup.poll_s - 0.1))  # wait_until's own wait is 0.1 s
            self._note_backends()
            with self.engine.connect() as conn:
                status = conn.scalar(text("SELECT status FROM jobs WHERE id = :j"), {"j": job_id})
                queued = conn.scalar(
                    text("SELECT count(*) FROM pages WHERE job_id = :j AND status = 'pending'"),
                    {"j": job_id},
                )
            if self.drained is None and status is not None and queued == 0:
                self.drained = (time.time(), self.standin_stats())
            if self.filled is None and self.drained is None:
                stats = self.standin_stats()
                if all(s["running"] >= self.setup.max_num_seqs for s in stats):
                    self.filled = (time.time(), stats)
            return status == "done"

        wait_until(done, timeout_s, f"the {self.arm.key} job", lambda: self._progress(job_id))
        return job_id

    def _progress(self, job_id: str) -> str:
        with self.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT status, count(*) FROM pages WHERE job_id = :j GROUP BY status"),
                {"j": job_id},
            ).all()
        return str(dict(rows))

    def _note_backends(self) -> None:
        """CPU time of the PostgreSQL backends serving this database (pools keep them)."""
        with self.engine.connect() as conn:
            pids = conn.scalars(
                text("SELECT pid FROM pg_stat_activity WHERE datname = :d"), {"d": self.database}
            ).all()
        for pid in pids:
            self.backend_cpu[pid] = max(self.backend_cpu.get(pid, 0.0), process_cpu_s(pid))

    def standin_stats(self) -> list[dict[str, Any]]:
        return [standin_stats(p) for p in self.ports]

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds so far: the GPU workers by stage, the CPU worker, PostgreSQL, stand-ins."""
        time.sleep(0.7)  # the stage files are written every 0.5 s
        stages: Counter[str] = Counter()
        for path in self.stats_files:
            if path.exists():
                stages.update(json.loads(path.read_text(encoding="utf-8")))
        self._note_backends()
        assert self.cpu_worker is not None
        return {
            "render": stages["render"],
            "textlayer": stages["textlayer"],
            "tesseract": stages["tesseract"],
            "encode": stages["encode"],
            "stream_detect": stages["stream"],
            "gpu_worker_rest": stages["process"]
            - sum(stages[s] for s in ("render", "textlayer", "tesseract", "encode", "stream")),
            "gpu_workers": stages["process"],
            "gpu_workers_system": stages["process_system"],
            "rasters": stages["rasters"],
            "gpu_workers_max_rss_mb": stages["max_rss_mb"],
            "cpu_worker": process_cpu_s(self.cpu_worker.pid),
            "postgres": sum(self.backend_cpu.values()),
            "standins": sum(process_cpu_s(p.pid) for p in self.standins),
        }

    def job_rows(self, job_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            seconds = conn.scalar(
                text("SELECT EXTRACT(EPOCH FROM finished_at - created_at) FROM jobs WHERE id = :j"),
                {"j": job_id},
            )
            pages: dict[str, int] = dict(
                conn.execute(
                    text("SELECT status, count(*) FROM pages WHERE job_id = :j GROUP BY status"),
                    {"j": job_id},
                ).all()
            )
            attempts = [
                dict(row._mapping)
                for row in conn.execute(
                    text(
                        "SELECT page_id, status, engine, finish_reason, stop_mechanism, role,"
                        " completion_tokens, max_tokens, tokens_after_verdict FROM attempts"
                        " WHERE job_id = :j"
                    ),
                    {"j": job_id},
                )
            ]
            endings = [
                tuple(row)
                for row in conn.execute(
                    text(
                        "SELECT p.final_step, p.final_engine,"
                        " min(a.step_index) FILTER (WHERE a.status = 'ok'),"
                        " coalesce(bool_or(a.role = 'confirm' AND a.status = 'ok'), false),"
                        " coalesce(bool_or(a.status = 'degenerate'), false),"
                        " coalesce(sum(a.completion_tokens), 0)"
                        " FROM pages p LEFT JOIN attempts a ON a.page_id = p.id"
                        " WHERE p.job_id = :j GROUP BY p.id"
                    ),
                    {"j": job_id},
                )
            ]
            failures = conn.execute(
                text(
                    "SELECT failure_category, left(error, 160), count(*) FROM pages"
                    " WHERE job_id = :j AND status = 'failed' GROUP BY 1, 2"
                ),
                {"j": job_id},
            ).all()
        return {
            "seconds": float(seconds),
            "pages": pages,
            "failures": [list(row) for row in failures],
            "attempts": attempts,
            "endings": endings,  # a page: final step, engine, its index, confirmed, looped, tokens
        }

    def stop(self) -> None:
        for process in [*self.gpu_workers, *([self.cpu_worker] if self.cpu_worker else [])]:
            stop_worker(process)
        for process in self.standins:
            process.terminate()
            process.wait(10)
        self.engine.dispose()
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{self.prefix}:*"))
        if keys:
            client.delete(*keys)
        drop_database(self.database)


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
