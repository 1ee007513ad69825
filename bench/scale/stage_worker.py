"""A `folio worker` that keeps its CPU time by stage, for `python -m bench scale`.

    python bench/scale/stage_worker.py STATS_FILE worker -Q ... -P threads -c 256

The same worker as `folio worker` (`workers.app`), with Folio's own functions wrapped to add
each call's CPU time (`time.thread_time`, so threads running at once are told apart; a call
inside another timed call counts in the outer one only):
- render: `read_page` (the page's text layer and sizes), `model_image` (the page rasterised at
  the profile's size and resized) and any other rasterising (the renderer's own timing seam,
  `app.pdf.render.time_rasters`: the page at FOLIO_DPI where an engine asks for it); `rasters`
  counts the rasterisings, so a page rendered twice shows;
- textlayer: `judge_layer` (the text-layer gate, when a text-layer step runs);
- tesseract: the Tesseract engine's calls (the plan's OCR fallback, where a step falls to it);
- encode: `encode_image` (PNG and base64);
- stream and detect: the CPU time of the engines' I/O threads (named `vlm.IO_THREAD_NAME`: the
  SSE client, JSON, the loop detector), read from /proc;
- the rest of the process (Celery, the database client, leases, bookkeeping) is what the
  process used beyond those.
The wrapped functions are public names, each checked to exist where it is wrapped (a function
moved elsewhere fails the start, never goes untimed). What the worker runs is chosen by its
settings alone: the no-stop and server-stop arms set FOLIO_DETECTOR_ONLINE=false.
Written to STATS_FILE every 0.5 s. With BENCH_SCALE_PROFILE=FILE, each page's own thread is
also profiled in CPU time (cProfile with `time.thread_time`), all pages added into FILE.
"""

from __future__ import annotations

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


def wrap(
    owner: Any, name: str, wrapper: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> None:
    """Replace the public function `owner.name` by `wrapper(it)`; refuse a name not there."""
    if name.startswith("_") or not callable(getattr(owner, name, None)):
        raise RuntimeError(f"stage_worker: no public function {name!r} on {owner!r} to time")
    setattr(owner, name, wrapper(getattr(owner, name)))


def stage(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A wrapper adding a function's CPU time to stage `name`."""
    return lambda function: timed(name, function)


def install() -> None:
    import app.engines.tesseract as tesseract
    import app.engines.vlm as vlm
    import app.pdf.render as render
    import app.pipeline.page_render as page_render

    wrap(page_render, "read_page", stage("render"))
    wrap(page_render, "judge_layer", stage("textlayer"))
    wrap(tesseract.TesseractEngine, "transcribe", stage("tesseract"))
    wrap(vlm, "model_image", stage("render"))
    wrap(vlm, "encode_image", stage("encode"))
    render.time_rasters(timed("render", lambda render_it: render_it(), "rasters"))
    if os.environ.get("BENCH_SCALE_PROFILE"):
        import app.distributed as distributed

        wrap(distributed, "run_queued_page", profiled)


def thread_cpu_s(tid: int) -> float:
    try:
        fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def io_threads_cpu_s() -> float:
    """CPU seconds of the live VLM engines' I/O threads."""
    from app.engines.vlm import IO_THREAD_NAME

    return sum(
        thread_cpu_s(thread.native_id)
        for thread in threading.enumerate()
        if thread.name == IO_THREAD_NAME and thread.native_id is not None
    )


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
    found["stream"] = io_threads_cpu_s()
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
