"""Loaded by every Python process of a test vLLM server (VllmServer puts this folder on the
server's PYTHONPATH, and no other process's): the engine processes are forked, not spawned, and,
where FOLIO_TRACE_LOG is set, the close path is traced (close_trace.py).

Why fork: vLLM's CPU platform sets the start method of its engine core and model worker to
`spawn` whatever the environment says (vllm/platforms/cpu.py, `check_and_update_config`), so
each of the two re-imports vLLM from scratch: 14 s each on a 2-core AMD EPYC (Zen 3), a server
up in 47 s, 20 s with fork (tests/vllm_cpu/README.md). Both are children of the API server's
process tree either way; the engine's code, arguments and environment are the same, and a
server on a GPU spawns its engine too (vLLM's API server sets `spawn` when nothing else is set),
so nothing a test checks depends on the method. FOLIO_VLLM_START_METHOD=spawn keeps vLLM's own.
The method taken is logged, so a vLLM this patch no longer fits shows in the server's log (and
tests/vllm_cpu/test_vllm_server.py fails) rather than quietly spawning again.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

START_METHOD = os.environ.get("FOLIO_VLLM_START_METHOD", "fork")
PATCHED = "vllm.platforms.cpu"
MARK = "folio test server: engine start method"


def _say(text: str) -> None:
    print(f"{MARK} {text}", file=sys.stderr, flush=True)


def _patch_platform(module: ModuleType) -> None:
    platform = module.CpuPlatform
    original = platform.check_and_update_config.__func__

    def check_and_update_config(cls: Any, vllm_config: Any) -> None:
        original(cls, vllm_config)
        was = os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = START_METHOD
        _say(f"{START_METHOD} (vLLM's CPU platform set {was})")

    platform.check_and_update_config = classmethod(check_and_update_config)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs _patch_platform right after vllm.platforms.cpu is first executed."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != PATCHED:
            return None
        sys.meta_path.remove(self)  # the real spec, found by the finders after this one
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            _say(f"unchanged: {PATCHED} not found")
            return spec
        loader: Any = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            try:
                _patch_platform(module)
            except Exception as exc:  # a vLLM this no longer fits
                _say(f"unchanged: {exc!r}")

        loader.exec_module = exec_module
        return spec


if START_METHOD != "spawn":
    sys.meta_path.insert(0, _AfterImport())

if os.environ.get("FOLIO_TRACE_LOG"):
    import close_trace

    close_trace.install()
