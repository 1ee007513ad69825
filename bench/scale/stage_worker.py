"""A `folio worker` that keeps its CPU time by stage, for `python -m bench scale`.

    python bench/scale/stage_worker.py STATS_FILE worker -Q ... -P threads -c 256

The same worker as `folio worker` (`workers.app`), with Folio's own functions wrapped to add
each call's CPU time (`time.thread_time`, so threads running at once are told apart; a call
inside another timed call counts in the outer one only):
- render: `read_page` (the page's text layer and sizes), `model_image` (the page rasterised at
  the profile's size and resized) and any other rasterising (`app.pdf.render._pixels`: the page
  at FOLIO_DPI where an engine asks for it); `rasters` counts the rasterisings, so a page
  rendered twice shows;
- textlayer: `judge_layer` (the text-layer gate, when a text-layer step runs);
- tesseract: the Tesseract engine's calls (the plan's OCR fallback, where a step falls to it);
- encode: `encode_image` (PNG and base64);
- stream and detect: the CPU time of the engine's I/O thread (`vlm-io`: the SSE client, JSON,
  the loop detector), read from /proc;
- the rest of the process (Celery, the database client, leases, bookkeeping) is what the
  process used beyond those.
With FOLIO_BENCH_CLIENT_DETECTOR=off the engine's loop detector never fires (the benchmark's
no-stop and server-stop arms: a pipeline that relies on the server alone).
Written to STATS_FILE every 0.5 s. With BENCH_SCALE_PROFILE=FILE, each page's own thread is
also profiled in CPU time (cProfile with `time.thread_time`), all pages added into FILE.
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import os
import pstats
import resource
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

CPU: defaultdict[str, float] = defaultdict(float)
CALLS: defaultdict[str, int] = defaultdict(int)
IO_THREADS: list[int] = []
_LOCK = threading.Lock()
_INSIDE = threading.local()  # whether this thread is in a timed call already


def timed(stage: str, function: Callable[..., Any], calls: str | None = None) -> Callable[..., Any]:
    """`function`, adding its CPU time to `stage` (outermost timed calls only) and its calls
    to `calls`."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        outer = not getattr(_INSIDE, "active", False)
        _INSIDE.active = True
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent = time.thread_time() - started
            _INSIDE.active = not outer
            with _LOCK:
                if outer:
                    CPU[stage] += spent
                if calls:
                    CALLS[calls] += 1

    return wrapper


_PROFILES: list[pstats.Stats] = []


def profiled(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` under cProfile in CPU time, its profile added to the others."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        profile = cProfile.Profile(time.thread_time)
        try:
            return profile.runcall(function, *args, **kwargs)
        finally:
            with _LOCK:
                if _PROFILES:
                    _PROFILES[0].add(profile)
                else:
                    _PROFILES.append(pstats.Stats(profile))

    return wrapper


class NeverLoops:
    """A detector that sees nothing: the stop is left to the server."""

    def __init__(self, *_: Any, **__: Any) -> None:
        pass

    def feed(self, chunk: str) -> None:
        return None


def install() -> None:
    import app.degeneration
    import app.engines.tesseract as tesseract
    import app.engines.vlm as vlm
    import app.pdf.render as render
    import app.pipeline.page_render as page_render

    page_render.read_page = timed("render", page_render.read_page)
    render._pixels = timed("render", render._pixels, "rasters")
    page_render.judge_layer = timed("textlayer", page_render.judge_layer)
    tesseract.TesseractEngine.transcribe = timed(  # type: ignore[method-assign]
        "tesseract", tesseract.TesseractEngine.transcribe
    )
    vlm.model_image = timed("render", vlm.model_image)
    vlm.encode_image = timed("encode", vlm.encode_image)
    if os.environ.get("BENCH_SCALE_PROFILE"):
        import app.distributed as distributed

        distributed.run_queued_page = profiled(distributed.run_queued_page)
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


def threads_cpu_s() -> dict[str, float]:
    """CPU seconds of the live threads by name, numbers left out (the page threads together):
    where the process's CPU beyond the stages goes."""
    found: defaultdict[str, float] = defaultdict(float)
    for thread in threading.enumerate():
        if thread.native_id is not None:
            name = thread.name.rstrip("0123456789_-").split("-")[0] or "thread"
            found[name] += thread_cpu_s(thread.native_id)
    return dict(found)


def snapshot() -> dict[str, float]:
    with _LOCK:
        found: dict[str, float] = {**CPU, **CALLS}
    found["stream"] = sum(thread_cpu_s(tid) for tid in IO_THREADS)
    times = os.times()
    found["process"] = times.user + times.system
    found["process_system"] = times.system
    found["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for name, spent in threads_cpu_s().items():
        found[f"thread:{name}"] = spent
    return found


def write_periodically(path: Path) -> None:
    while True:
        time.sleep(0.5)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(snapshot()), encoding="utf-8")
        temporary.replace(path)
        if _PROFILES and (profile_file := os.environ.get("BENCH_SCALE_PROFILE")):
            with _LOCK:
                _PROFILES[0].dump_stats(profile_file)


def main() -> None:
    stats_file = Path(sys.argv[1])
    install()
    threading.Thread(target=write_periodically, args=(stats_file,), daemon=True).start()
    from workers.app import create_app

    create_app().worker_main(sys.argv[2:])


if __name__ == "__main__":
    main()
