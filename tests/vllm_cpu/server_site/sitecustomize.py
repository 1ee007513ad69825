"""Loaded by every Python process of a test vLLM server (VllmServer puts this folder on the
server's PYTHONPATH, and no other process's): the engine core and its model worker are forked,
not spawned; its queues' readers spin FOLIO_VLLM_BUSY_LOOP_S after a read, where set; and,
where FOLIO_TRACE_LOG is set, the close path is traced (close_trace.py).

Why fork: vLLM's CPU platform sets the start method of its engine core and model worker to
`spawn` whatever the environment says (vllm/platforms/cpu.py, `check_and_update_config`), so
each of the two re-imports vLLM from scratch: 7 s each here (14 s on a slower 2-core AMD EPYC).
The API server forks its engine core here, and the engine core forks its model worker (neither
has run model code by then). What a fork does not carry is mended:
- GNU OpenMP's thread pool does not survive a fork, so every process of the server runs with
  OMP_NUM_THREADS=1 from its start. With the pool that the API server's multi-modal warmup
  made (2 threads on 2 cores), a forked worker took twice as long per token (300 tokens in
  1.6 s against 0.8 s spawned) and once hung in a full test run (execute_model timed out after
  300 s). vLLM gives a spawned worker OMP_NUM_THREADS of its bound cores (one here) and a
  forked one sets that count itself (`init_cpu_threads_env`): as many threads either way.
- GNU OpenMP binds a spawned worker to the cores vLLM names in GOMP_CPU_AFFINITY when it loads
  there; a forked worker's parent loaded it before that was set, so the forked worker binds
  itself to them (`_bind_as_spawned`; VllmServer gives each pytest-xdist worker's servers a
  core of their own this way).
A server was up in 11 s against 18 s with both spawned, 12 against 19 CPU-s (2026-11-27, one
start each, idle). The engine's code, arguments and environment are otherwise the same, and a
server on a GPU spawns its engine too (vLLM's API server sets `spawn` when nothing else is
set), so nothing a test checks depends on the method. FOLIO_VLLM_START_METHOD=spawn keeps
vLLM's own (and OpenMP's threads). The method taken and the cores bound are logged, so a vLLM
this patch no longer fits shows in the server's log (and tests/vllm_cpu/test_vllm_server.py
fails) rather than quietly spawning again.

Why a shorter spin: the engine core and its model worker read each other's shared-memory queue
by spinning (sched_yield) for 1 s after every read before they sleep on a socket
(vllm/distributed/device_communicators/shm_broadcast.py, `SpinCondition`), so after every burst
of requests both burn up to a second of a core that the tests' other worker needs. VllmServer
sets 0.1 s (server.SERVER_ENV): 8 streams of 600 tokens took 9.9 s and 19.3 CPU-s of the server
against 11.6 s and 23.0 CPU-s at 1 s; beside a busy core, 11.6 s / 11.2 CPU-s against 13.1 s /
13.2 CPU-s; with no spin at all 42 s (each step waited on the socket). 2026-11-27, one run each.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

START_METHOD = os.environ.get("FOLIO_VLLM_START_METHOD", "fork")
# the API server: the first process of the server, whose children inherit this variable
API_SERVER = int(os.environ.setdefault("FOLIO_TEST_SERVER_ROOT_PID", str(os.getpid())))
MARK = "folio test server:"
OMP_WAS = os.environ.get("OMP_NUM_THREADS")


def _say(text: str) -> None:
    print(f"{MARK} {text}", file=sys.stderr, flush=True)


def _patch_platform(module: ModuleType) -> None:
    platform = module.CpuPlatform
    original = platform.check_and_update_config.__func__

    def check_and_update_config(cls: Any, vllm_config: Any) -> None:
        original(cls, vllm_config)
        if os.getpid() != API_SERVER:
            return  # set in the API server, whose forks inherit it
        was = os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")
        # read by the API server for its engine core and by the engine core for its worker
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = START_METHOD
        _say(
            f"engine core and model worker start method {START_METHOD} (vLLM's CPU platform set"
            f" {was}), OMP_NUM_THREADS 1 (was {OMP_WAS})"
        )

    platform.check_and_update_config = classmethod(check_and_update_config)


def _bind_as_spawned() -> None:
    """In every process forked below the API server: the cores vLLM names for its model
    worker's OpenMP threads (vllm/utils/ompmultiprocessing.py sets GOMP_CPU_AFFINITY around
    the worker's start only, so the engine core stays unbound, as when spawned). The forked
    process has one thread; those it starts inherit its cores."""
    listed = os.environ.get("GOMP_CPU_AFFINITY")
    if not listed:
        return
    cores: set[int] = set()
    for item in listed.replace(",", " ").split():
        first, _, last = item.partition("-")
        cores.update(range(int(first), int(last or first) + 1))
    os.sched_setaffinity(0, cores)
    _say(f"model worker bound to cores {sorted(cores)}")


def _patch_spin(module: ModuleType) -> None:
    condition = module.SpinCondition
    init = condition.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if self.is_reader:
            self.busy_loop_s = BUSY_LOOP_S

    condition.__init__ = __init__
    _say(f"queue readers spin {BUSY_LOOP_S:g} s")


# module -> what to run on it once it has loaded
PATCHES: dict[str, Callable[[ModuleType], None]] = {}
if START_METHOD != "spawn":
    PATCHES["vllm.platforms.cpu"] = _patch_platform
    if os.getpid() == API_SERVER:  # its children inherit both
        # before torch loads GNU OpenMP, which reads it once
        os.environ["OMP_NUM_THREADS"] = "1"
        os.register_at_fork(after_in_child=_bind_as_spawned)  # its forks' forks run it too
BUSY_LOOP_S = float(os.environ.get("FOLIO_VLLM_BUSY_LOOP_S", "-1"))
if BUSY_LOOP_S >= 0:
    PATCHES["vllm.distributed.device_communicators.shm_broadcast"] = _patch_spin
if os.environ.get("FOLIO_TRACE_LOG"):
    import close_trace

    PATCHES.update(close_trace.install())


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a module's patch right after the module is first executed."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        patch = PATCHES.get(name)
        if patch is None:
            return None
        sys.meta_path.remove(self)  # the real spec, found by the finders after this one
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            _say(f"unchanged: {name} not found")
            return spec
        loader: Any = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            try:
                patch(module)
            except Exception as exc:  # a vLLM this no longer fits
                _say(f"unchanged: {name}: {exc!r}")

        loader.exec_module = exec_module
        return spec


if PATCHES:
    sys.meta_path.insert(0, _AfterImport())
