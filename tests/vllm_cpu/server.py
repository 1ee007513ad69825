"""Start, watch and stop a real vLLM OpenAI-compatible server for tests and benchmarks.

Runs in the project venv (stdlib + httpx only); the server itself runs with the dedicated
vLLM venv's python (tests/vllm_cpu/setup_env.sh) on the tiny model (build_tiny_model.py).

    with VllmServer() as server:
        httpx.post(f"{server.base_url}/chat/completions", json=...)
        server.generation_tokens_total()
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

CACHE_DIR = Path.home() / ".cache" / "folio"
REPO_ROOT = Path(__file__).resolve().parents[2]
# On the server's PYTHONPATH: its engine forked rather than spawned, a close-path trace where
# asked for (server_site/sitecustomize.py)
SERVER_SITE = Path(__file__).resolve().parent / "server_site"
SERVED_MODEL_NAME = "tiny-qwen2vl"
HOST = "127.0.0.1"

# The notes in shared/notes/vllm-on-cpu.md explain each of these.
SERVER_ENV = {
    "VLLM_HOST_IP": HOST,  # else the engine's internal queue binds the eth0 address
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    # the engine's queue readers spin 0.1 s after a read, not vLLM's 1 s (server_site)
    "FOLIO_VLLM_BUSY_LOOP_S": "0.1",
}

MetricKey = tuple[str, tuple[tuple[str, str], ...]]


def worker_binding(env: Mapping[str, str]) -> dict[str, str]:
    """The model worker's core under pytest-xdist: worker N's servers on core N (modulo the
    cores). vLLM's CPU default binds every server's model worker to the first core and keeps
    the second for the rest, so two workers' servers shared one core for their forward passes
    while the other took everything else: two looping batches at once took 10.6 s on core 0
    and 7.5 s on cores 0 and 1 (2 cores, 8 x 1,500 tokens each). A plain run keeps vLLM's
    default, as do the benchmarks; an explicit VLLM_CPU_OMP_THREADS_BIND wins."""
    worker = env.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or "VLLM_CPU_OMP_THREADS_BIND" in env:
        return {}
    cores = sorted(os.sched_getaffinity(0))
    return {"VLLM_CPU_OMP_THREADS_BIND": str(cores[int(worker[2:]) % len(cores)])}


# Niceness given to the engine processes after start (None: leave them at the server's).
# Why: on these 2-core machines vLLM's engine core busy-polls its scheduler on one core and
# its worker runs the model on the other, so at equal priority the API server (which reads
# client disconnects and abort calls, and serves /metrics) gets no CPU for seconds at a time
# and a closed stream is noticed only after the loop has run to its cap. A GPU server does not
# lose its API server's CPU to the engine this way. Renicing the engine after start needs no
# privilege (only raising a priority does), leaves vLLM's own launch untouched, and is undone
# by passing engine_nice=None: the "front end lagging" regime of the benchmark.
DEFAULT_ENGINE_NICE = 15


class VllmServerError(RuntimeError):
    """The server could not be started, or died."""


def default_venv() -> Path:
    return Path(os.environ.get("FOLIO_VLLM_VENV", CACHE_DIR / "vllm-venv")).expanduser()


def default_model_dir() -> Path:
    return Path(os.environ.get("FOLIO_VLLM_MODEL_DIR", CACHE_DIR / "tiny-qwen2vl")).expanduser()


def missing_prerequisites(venv: Path | None = None, model_dir: Path | None = None) -> str | None:
    """Why a server cannot be started here, or None when the venv and model exist."""
    venv = venv or default_venv()
    model_dir = model_dir or default_model_dir()
    if not (venv / "bin" / "python").exists():
        return f"no vLLM venv at {venv}: run tests/vllm_cpu/setup_env.sh"
    if not (model_dir / "config.json").exists():
        return (
            f"no tiny model at {model_dir}: run "
            f"{venv}/bin/python tests/vllm_cpu/build_tiny_model.py"
        )
    return None


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def root_url_of(url: str) -> str:
    """'http://h:p/v1/' -> 'http://h:p' (metrics and health live at the root)."""
    url = url.rstrip("/")
    return url.removesuffix("/v1")


_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text: str) -> dict[MetricKey, float]:
    """Prometheus text format -> {(name, sorted label pairs): value}."""
    samples: dict[MetricKey, float] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match or line.startswith("#"):
            continue
        name, label_text, value = match.groups()
        labels = tuple(
            sorted(
                (key, raw.replace(r"\"", '"').replace(r"\n", "\n").replace("\\\\", "\\"))
                for key, raw in _LABEL.findall(label_text or "")
            )
        )
        samples[(name, labels)] = float(value)
    return samples


def metric_total(samples: Mapping[MetricKey, float], name: str, **labels: str) -> float:
    """Sum of the samples called `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, pairs), v in samples.items() if n == name and wanted <= set(pairs))


def fetch_metrics(url: str, timeout: float = 10.0) -> dict[MetricKey, float]:
    response = httpx.get(f"{root_url_of(url)}/metrics", timeout=timeout)
    response.raise_for_status()
    return parse_prometheus(response.text)


def generation_tokens_total(url: str) -> float:
    return metric_total(fetch_metrics(url), "vllm:generation_tokens_total")


class VllmServer:
    """One vLLM server process group on 127.0.0.1, restartable on the same port."""

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        port: int | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        log_path: Path | str | None = None,
        venv: Path | str | None = None,
        # only stops a hung start: on a loaded 2-core machine a start took over 240 s
        startup_timeout: float = 900.0,
        max_model_len: int = 2048,
        engine_nice: int | None = DEFAULT_ENGINE_NICE,
    ) -> None:
        self.model_dir = Path(model_dir) if model_dir else default_model_dir()
        self.venv = Path(venv) if venv else default_venv()
        self.port = port or free_port()
        self.extra_args = list(extra_args)
        self.env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.max_model_len = max_model_len
        self.engine_nice = engine_nice
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix=f"folio-vllm-{self.port}-", suffix=".log")
            os.close(fd)
            log_path = name
        self.log_path = Path(log_path)
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    # --- addresses -------------------------------------------------------------------
    @property
    def root_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL, e.g. http://127.0.0.1:PORT/v1."""
        return f"{self.root_url}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        return [
            str(self.venv / "bin" / "python"),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir),
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--enforce-eager",
            "--max-model-len",
            str(self.max_model_len),
            "--dtype",
            "bfloat16",
            "--enable-log-requests",
            "--limit-mm-per-prompt",
            '{"image":2,"video":0}',
            "--served-model-name",
            SERVED_MODEL_NAME,
            *self.extra_args,
        ]

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.pop("VIRTUAL_ENV", None)  # the project venv's, not the server's
        # This checkout's plugin, whichever checkout the venv's editable install follows
        # (it reaches the engine processes too: the liveness probe's behaviour proves it).
        env.update(SERVER_ENV)
        env.update(worker_binding(env))
        env.update(self.env)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, (str(SERVER_SITE), self.env.get("PYTHONPATH"), str(REPO_ROOT)))
        )
        return env

    # --- lifecycle -------------------------------------------------------------------
    def start(self) -> VllmServer:
        if self.is_running():
            raise VllmServerError(f"server already running (pid {self.pid})")
        reason = missing_prerequisites(self.venv, self.model_dir)
        if reason:
            raise VllmServerError(reason)
        began = time.monotonic()
        with self.log_path.open("ab") as log:
            log.write(f"\n=== folio: starting {' '.join(self.command())}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._environment(),
                cwd=self.log_path.parent,
                # Its own process group, so stop() reaches the workers, but not its own
                # session: with sched_autogroup (on here) a new session is a CPU group of its
                # own, shared 50/50 with the client's whatever the niceness inside it, so the
                # engine's renice ranked it below its API server only, and the client, waiting
                # for CPU, picked up finished requests seconds late and left batch slots empty.
                process_group=0,
            )
        try:
            self._wait_healthy(began)
            if self.engine_nice is not None:
                self.renice_engine(self.engine_nice)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def _wait_healthy(self, began: float) -> None:
        assert self._proc is not None
        deadline = began + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                raise VllmServerError(
                    f"vLLM server exited with code {code} during startup; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.root_url}/health", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.5)
        raise VllmServerError(
            f"vLLM server not healthy after {self.startup_timeout:.0f} s; "
            f"log {self.log_path}:\n{self.log_tail()}"
        )

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left after `grace` s."""
        self._signal_group(signal.SIGTERM, grace)

    def engine_pids(self) -> list[int]:
        """The engine processes: `VLLM::EngineCore` (a child of the API server) and its
        model worker(s), i.e. every live member of the group but the API server itself and
        multiprocessing's resource tracker."""
        proc = self._proc
        if proc is None:
            return []
        return [
            pid
            for pid in group_members(proc.pid)
            if pid != proc.pid and not _is_resource_tracker(pid)
        ]

    def renice_engine(self, nice: int) -> None:
        """Set every thread of the engine processes to `nice` (see DEFAULT_ENGINE_NICE).

        Linux keeps a nice value per thread, and setpriority(pid) changes only the thread
        whose id is pid: the engine's scheduler, ZMQ and torch threads already exist by now,
        so each is set through /proc/PID/task. Threads started later inherit it.
        """
        pids = self.engine_pids()
        if not pids:
            raise VllmServerError(f"no engine process found under pid {self.pid}")
        for pid in pids:
            for tid in thread_ids(pid):
                with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                    os.setpriority(os.PRIO_PROCESS, tid, nice)

    def freeze_engine(self) -> None:
        """SIGSTOP the engine processes, leaving the API server up: requests then hang in flight."""
        for pid in self.engine_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def kill(self) -> None:
        """SIGKILL the server and its workers at once (a crash, as seen by clients).

        multiprocessing's resource tracker is spared so that it unlinks the ~400 MB of
        /dev/shm segments the engine leaves behind; it exits by itself right after.
        """
        proc = self._proc
        if proc is None:
            return
        # The API server (the group leader) goes first: killed after its engine, it could
        # notice the engine's death and end open streams cleanly with an error event.
        members = sorted(group_members(proc.pid), key=lambda pid: pid != proc.pid)
        for pid in members:
            if not _is_resource_tracker(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self._signal_group(signal.SIGCONT, 10.0)  # SIGKILLs any stragglers after 10 s

    def restart(self) -> VllmServer:
        """Stop if running, then start again on the same port and log file."""
        self.stop()
        return self.start()

    def _signal_group(self, sig: signal.Signals, grace: float) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        pgid = proc.pid  # process_group=0 makes the leader's pid the group id
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        if not _wait_group_gone(proc, pgid, grace):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            _wait_group_gone(proc, pgid, 10.0)

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- observation -----------------------------------------------------------------
    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def metrics(self) -> dict[MetricKey, float]:
        return fetch_metrics(self.root_url)

    def generation_tokens_total(self) -> float:
        return generation_tokens_total(self.root_url)


@dataclass
class VllmEndpoint:
    """A reachable server: its URLs, and its process when this session started it."""

    root_url: str
    server: VllmServer | None = None
    model: str = SERVED_MODEL_NAME
    trace_log: Path | None = None  # its close-path trace (server_site/close_trace.py), if any

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def generation_tokens_total(self) -> float:
        return generation_tokens_total(self.root_url)

    def metrics(self) -> dict[MetricKey, float]:
        return fetch_metrics(self.root_url)

    def log_text(self) -> str | None:
        """The server log, or None for a server started elsewhere."""
        return self.server.log_text() if self.server else None


def _wait_group_gone(proc: subprocess.Popen[bytes], pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        proc.poll()  # reap the leader
        if not group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def thread_ids(pid: int) -> list[int]:
    """Every thread of a process (nice and CPU affinity are kept per thread on Linux)."""
    return [int(task.name) for task in Path(f"/proc/{pid}/task").glob("[0-9]*")]


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group.

    Zombies are skipped: orphans are reparented to PID 1, which here reaps them only
    every few seconds, and they hold nothing.
    """
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # "pid (comm) state ppid pgrp ...": comm may hold spaces, so split after ')'
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(stat.parent.name))
    return members


def _is_resource_tracker(pid: int) -> bool:
    try:
        return b"multiprocessing.resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
