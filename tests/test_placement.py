"""The benchmark's placement of the test server's processes (tests/vllm_cpu/placement.py), on a
real process group laid out as vLLM's CPU server lays itself out: an API server leading the
group, an engine core and a model worker (`VLLM::Worker`) bound to one core, each with a thread
besides its main one (affinity is kept per thread)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.vllm_cpu.placement import WORKER_COMM, isolate_worker
from tests.vllm_cpu.server import VllmServer, thread_ids

CPUS = frozenset(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="placement needs two CPUs to split")

_THREADED = "import threading, time\nthreading.Thread(target=time.sleep, args=(120,)).start()\n"
_WORKER = (
    "import os\n"
    f"open('/proc/self/comm', 'w').write({WORKER_COMM!r})\n"
    "os.sched_setaffinity(0, {int(os.environ['WORKER_CPUS'])} "
    "if os.environ['WORKER_CPUS'] != 'all' else os.sched_getaffinity(0))\n" + _THREADED
)
_API_SERVER = (
    "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', sys.argv[1]])\n"  # the model worker
    "subprocess.Popen([sys.executable, '-c', sys.argv[2]])\n" + _THREADED  # the engine core
)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _affinities(pid: int) -> set[frozenset[int]]:
    return {frozenset(os.sched_getaffinity(tid)) for tid in thread_ids(pid)}


@pytest.fixture
def server_group(request: pytest.FixtureRequest) -> Iterator[VllmServer]:
    """A VllmServer holding the fake group; the worker bound as `request.param` says."""
    worker_cpus = request.param
    own = os.sched_getaffinity(0)
    proc = subprocess.Popen(
        [sys.executable, "-c", _API_SERVER, _WORKER, _THREADED],
        env={**os.environ, "WORKER_CPUS": worker_cpus},
        process_group=0,
    )
    server = VllmServer(log_path=os.devnull)
    server._proc = proc  # adopt the group instead of starting vLLM
    try:
        for _ in range(1200):  # the children start, the worker names and binds itself
            engine = server.engine_pids()
            named = [pid for pid in engine if _comm(pid) == WORKER_COMM]
            if (
                len(engine) == 2
                and named
                and all(len(thread_ids(pid)) == 2 for pid in [proc.pid, *engine])
            ):
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"the fake server's processes did not start: {server.engine_pids()}")
        yield server
    finally:
        os.sched_setaffinity(0, own)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("server_group", [str(min(CPUS))], indirect=True)
def test_everything_but_the_worker_leaves_the_workers_core(server_group: VllmServer) -> None:
    worker_cpu = frozenset({min(CPUS)})
    rest = CPUS - worker_cpu
    engine = server_group.engine_pids()
    (worker,) = [pid for pid in engine if _comm(pid) == WORKER_COMM]
    (core,) = [pid for pid in engine if pid != worker]
    assert server_group.pid is not None

    placement = isolate_worker(server_group)

    assert placement is not None
    assert (placement.worker_cpus, placement.front_end_cpus) == (worker_cpu, rest)
    assert _affinities(worker) == {worker_cpu}  # left where vLLM bound it
    assert _affinities(core) == {rest}  # every thread, not only the main one
    assert _affinities(server_group.pid) == {rest}
    assert frozenset(os.sched_getaffinity(0)) == rest  # the client too
    assert f"model worker on CPU {min(CPUS)}" in placement.describe()


@pytest.mark.parametrize("server_group", ["all"], indirect=True)
def test_a_worker_on_every_core_leaves_nothing_to_move(server_group: VllmServer) -> None:
    core = [pid for pid in server_group.engine_pids() if _comm(pid) != WORKER_COMM]

    assert isolate_worker(server_group) is None
    assert _affinities(core[0]) == {CPUS}
    assert frozenset(os.sched_getaffinity(0)) == CPUS
