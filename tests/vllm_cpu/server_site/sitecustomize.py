"""Loaded by every Python process of a test vLLM server (VllmServer puts this folder on the
server's PYTHONPATH, and no other process's): the engine core is forked, not spawned; its
queues' readers spin FOLIO_VLLM_BUSY_LOOP_S after a read, where set; and, where FOLIO_TRACE_LOG
is set, the close path is traced (close_trace.py).

Why fork: vLLM's CPU platform sets the start method of its engine core and model worker to
`spawn` whatever the environment says (vllm/platforms/cpu.py, `check_and_update_config`), so
each of the two re-imports vLLM from scratch: 14 s each on a 2-core AMD EPYC (Zen 3). The API
server forks its engine core here (it has run no model code yet); the engine core still spawns
its model worker (`_spawn_below`). The engine's code, arguments and environment are the same,
and a server on a GPU spawns its engine too (vLLM's API server sets `spawn` when nothing else is
set), so nothing a test checks depends on the method. FOLIO_VLLM_START_METHOD=spawn keeps vLLM's
own. The method taken is logged, so a vLLM this patch no longer fits shows in the server's log (and
tests/vllm_cpu/test_vllm_server.py fails) rather than quietly spawning again.

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


def _say(text: str) -> None:
    print(f"{MARK} {text}", file=sys.stderr, flush=True)


def _patch_platform(module: ModuleType) -> None:
    platform = module.CpuPlatform
    original = platform.check_and_update_config.__func__

    def check_and_update_config(cls: Any, vllm_config: Any) -> None:
        original(cls, vllm_config)
        if os.getpid() != API_SERVER:
            return  # the engine core's own model worker: spawned, as vLLM set
        was = os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = START_METHOD
        os.register_at_fork(after_in_child=_spawn_below)
        _say(f"engine start method {START_METHOD} (vLLM's CPU platform set {was})")

    platform.check_and_update_config = classmethod(check_and_update_config)


def _spawn_below() -> None:
    """In the forked engine core: its model worker spawned, as vLLM's CPU platform says. A
    worker forked from the engine core hung in its first forward passes (RPC execute_model timed
    out after 300 s, 2026-11-27): the engine core has set up OpenMP by then, and GNU OpenMP's
    threads do not survive a fork."""
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"


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
