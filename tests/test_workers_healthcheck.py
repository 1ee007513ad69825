"""The containers' worker healthcheck, `python -m workers inspect ping -d NODE`
(docker-compose.yml), against the real Redis and a real `folio worker`: it passes while the
worker lives and fails once it is gone, as Celery's own `celery inspect ping` does (issue 66: it
could never pass, because `python -m workers` started a worker whatever the sub-command)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REDIS_URL
from tests.distributed_support import start_worker, stop_worker, wait_until, worker_env

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]
NO_NODE_REPLIED = 69  # Celery's EX_UNAVAILABLE


def ping(env: dict[str, str], node: str) -> subprocess.CompletedProcess[str]:
    """The compose healthcheck's command line, with a shorter reply timeout."""
    command = [sys.executable, "-m", "workers", "inspect", "ping", "--timeout", "3", "-d", node]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_healthcheck_passes_on_a_live_worker_and_fails_on_a_dead_one(
    postgres_url: str, prefix: str, tmp_path: Path
) -> None:
    env = worker_env(postgres_url, REDIS_URL, prefix)
    worker = start_worker(env, concurrency=1, log=tmp_path / "worker.log")
    # `folio worker` execs Celery in its own process: the node is folio-<queues>-<pid>@<host>,
    # as the compose healthcheck names it (pid 1 there).
    node = f"folio-cpu-gpu-{worker.pid}@{socket.gethostname()}"
    try:
        answers: list[subprocess.CompletedProcess[str]] = []

        def answered() -> bool:
            answers.append(ping(env, node))
            return answers[-1].returncode == 0

        log = tmp_path / "worker.log"
        wait_until(answered, 120, f"{node} to answer", lambda: f"{answers[-1]} {log.read_text()}")
        assert "pong" in answers[-1].stdout and node in answers[-1].stdout
    finally:
        stop_worker(worker)

    gone = ping(env, node)
    assert gone.returncode == NO_NODE_REPLIED, gone
    assert "No nodes replied" in gone.stdout + gone.stderr


def test_the_worker_sub_command_still_starts_a_worker(prefix: str) -> None:
    """`folio worker` execs `python -m workers worker ...`: the sub-command reaches Celery's."""
    shown = subprocess.run(
        [sys.executable, "-m", "workers", "worker", "--help"],
        env=worker_env("sqlite://", REDIS_URL, prefix),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "--queues" in shown.stdout and "--concurrency" in shown.stdout
