"""A `folio worker` that keeps its CPU time by stage, for `python -m bench scale`.

    python bench/scale/stage_worker.py STATS_FILE worker -Q ... -P threads -c 256

The same worker as `folio worker` (`workers.app`), with Folio's own functions wrapped to add
each call's CPU time (`time.thread_time`, so threads running at once are told apart):
- render: `render_page` (the page at FOLIO_DPI, its text layer) and `model_image` (the page
  rendered again at the profile's size and resized);
- textlayer: `judge_layer` (the text-layer gate, on pages with a text layer);
- encode: `encode_image` (PNG and base64);
- stream and detect: the CPU time of the engine's I/O thread (`vlm-io`: the SSE client, JSON,
  the loop detector), read from /proc;
- the rest of the process (Celery, the database client, leases, bookkeeping) is what the
  process used beyond those.
With FOLIO_BENCH_CLIENT_DETECTOR=off the engine's loop detector never fires (the benchmark's
no-stop and server-stop arms: a pipeline that relies on the server alone).
Written to STATS_FILE every 0.5 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

CPU: defaultdict[str, float] = defaultdict(float)
IO_THREADS: list[int] = []
_LOCK = threading.Lock()


def timed(stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent = time.thread_time() - started
            with _LOCK:
                CPU[stage] += spent

    return wrapper


class NeverLoops:
    """A detector that sees nothing: the stop is left to the server."""

    def __init__(self, *_: Any, **__: Any) -> None:
        pass

    def feed(self, chunk: str) -> None:
        return None


def install() -> None:
    import app.degeneration
    import app.engines.vlm as vlm
    import app.pipeline.process_page as process_page

    process_page.render_page = timed("render", process_page.render_page)
    process_page.judge_layer = timed("textlayer", process_page.judge_layer)
    vlm.model_image = timed("render", vlm.model_image)
    vlm.encode_image = timed("encode", vlm.encode_image)
    if os.environ.get("FOLIO_BENCH_CLIENT_DETECTOR") == "off":
        app.degeneration.LoopDetector = NeverLoops  # type: ignore[misc,assignment]
    original = vlm._LoopThread.__init__

    def remembered(self: Any) -> None:
        original(self)
        future = asyncio.run_coroutine_threadsafe(_native_id(), self.loop)
        IO_THREADS.append(future.result(10))

    vlm._LoopThread.__init__ = remembered  # type: ignore[method-assign]


async def _native_id() -> int:
    return threading.get_native_id()


def thread_cpu_s(tid: int) -> float:
    try:
        fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def snapshot() -> dict[str, float]:
    with _LOCK:
        found: dict[str, float] = dict(CPU)
    found["stream"] = sum(thread_cpu_s(tid) for tid in IO_THREADS)
    times = os.times()
    found["process"] = times.user + times.system
    found["process_system"] = times.system
    return found


def write_periodically(path: Path) -> None:
    while True:
        time.sleep(0.5)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(snapshot()), encoding="utf-8")
        temporary.replace(path)


def main() -> None:
    stats_file = Path(sys.argv[1])
    install()
    threading.Thread(target=write_periodically, args=(stats_file,), daemon=True).start()
    from workers.app import create_app

    create_app().worker_main(sys.argv[2:])


if __name__ == "__main__":
    main()
