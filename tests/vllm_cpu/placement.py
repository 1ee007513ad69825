"""Where the test server's processes run when a benchmark measures wall-clock on a small machine.

vLLM's CPU backend binds its model worker (`VLLM::Worker`, the process that runs the forward
passes) to one core and leaves the rest to "reserved" work: the engine core's scheduler, the API
server. Nothing stops the API server, the engine core or the benchmark's own client from landing
on the worker's core, though, and there each of them stalls a forward pass for as long as it
runs: the steps of the same batch then took 6.0 to 8.0 ms on the 2-core machines. Confining
everything but the worker to the reserved cores makes the worker's core behave like a GPU (the
model's compute is not shared with the front end), and the front end shares the rest, ranked by
niceness (the engine core below the API server and the client, see server.DEFAULT_ENGINE_NICE).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from tests.vllm_cpu.server import VllmServer, thread_ids

WORKER_COMM = "VLLM::Worker"


@dataclass(frozen=True)
class Placement:
    worker_cpus: frozenset[int]
    front_end_cpus: frozenset[int]

    def describe(self) -> str:
        return (
            f"model worker on CPU {_cpus(self.worker_cpus)}; API server, engine core and "
            f"client on CPU {_cpus(self.front_end_cpus)}"
        )


def _cpus(cpus: frozenset[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus))


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def set_affinity(pid: int, cpus: frozenset[int]) -> None:
    """Every thread of `pid` (affinity is per thread; threads started later inherit it)."""
    for tid in thread_ids(pid):
        with contextlib.suppress(ProcessLookupError, FileNotFoundError, PermissionError):
            os.sched_setaffinity(tid, cpus)


def isolate_worker(server: VllmServer) -> Placement | None:
    """Pin the server's API server and engine core, and this process, off the model worker's
    cores. None (nothing changed) where the worker is not bound or binds every core."""
    everything = frozenset(os.sched_getaffinity(0))
    engine = server.engine_pids()
    workers = [pid for pid in engine if _comm(pid).startswith(WORKER_COMM)]
    if not workers or server.pid is None:
        return None
    worker_cpus = frozenset().union(*(os.sched_getaffinity(pid) for pid in workers))
    rest = everything - worker_cpus
    if not rest:
        return None
    for pid in [server.pid, *engine]:
        if pid not in workers:
            set_affinity(pid, rest)
    set_affinity(os.getpid(), rest)
    return Placement(worker_cpus, rest)
