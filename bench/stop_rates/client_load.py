"""Folio's own client at a GPU's rates: one worker process reading many streams at once.

The stand-in for vLLM in its replay mode (its own process) streams real pages at one token per
stream per step; this process runs Folio's VLM engine exactly as a `worker-gpu` does (one
engine, a thread per page in flight, the online detector on every chunk, the stream closed at a
verdict). Measured:
this process's CPU time per streamed token (all its threads), whether it kept pace, and for
each looping page the tokens the server generated after the verdict token.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from PIL import Image

from app.domain import PageInput
from app.engines.vlm import VlmEngine
from app.settings import PlanStep, VlmEndpoint
from bench.stop_rates.scripts import Script
from tests.vllm_cpu.server import free_port

REPO = Path(__file__).resolve().parents[2]
STEP = PlanStep(name="replay", engine="vlm", endpoint="replay", temperature=0.0, max_tokens=4096)


class ReplayServer:
    """The stand-in for vLLM in its replay mode (`bench.vllm_standin --mode replay`) in a
    subprocess, for one arm: each request the next script, one token per stream a step."""

    def __init__(self, scripts: list[Script], step_ms: float) -> None:
        self.port = free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [sys.executable, "-m", "bench.vllm_standin", "--mode", "replay"]
        self._proc = subprocess.Popen(
            [*command, "--port", str(self.port), "--step-ms", str(step_ms), "--model", "replay"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=REPO,
            env=env,
            text=True,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps([{"pieces": s.pieces} for s in scripts]))
        self._proc.stdin.close()
        if self._proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the replay stand-in did not start")

    def stats(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.root}/standin/stats", timeout=30).json())

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=10)


def run_arm(
    scripts: list[Script], streams: int, pages: int, step_ms: float, interval: int | None
) -> dict[str, Any]:
    """`pages` pages through `streams` threads of one engine; the figures of one arm."""
    server = ReplayServer(scripts, step_ms)
    endpoint = VlmEndpoint(
        base_url=f"{server.root}/v1",
        model="replay",
        max_concurrency=streams,
        engine_plugin=False,
        abort_call=False,
        server_repetition_detection=False,
        close_probe=False,  # a replay serves no /metrics; the arms time the client
        stream_interval=interval,
        max_image_side=64,
    )
    engine = VlmEngine("replay", endpoint)
    page = PageInput(Image.new("RGB", (48, 64), "white"), "", False)
    try:
        cpu, wall = time.process_time(), time.monotonic()
        with ThreadPoolExecutor(streams) as pool:
            results = list(pool.map(lambda _: engine.transcribe(page, STEP), range(pages)))
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        found = server.stats()
    finally:
        engine.close()
        server.close()
    return summarise(found, scripts, results, (cpu, wall), streams, step_ms, interval)


def summarise(
    found: dict[str, Any],
    scripts: list[Script],
    results: list[Any],
    spent: tuple[float, float],
    streams: int,
    step_ms: float,
    interval: int | None,
) -> dict[str, Any]:
    """The arm's figures from the stand-in's request list (tokens it wrote each stream before
    it saw the client leave) and the scripts' verdicts."""
    cpu, wall = spent
    rows = [r for r in found["requests"] if r["finish"] is not None]
    tokens = sum(r["tokens"] for r in rows)
    verdicts = [scripts[r["script"]].verdict for r in rows]
    after = [r["tokens"] - (v + 1) for r, v in zip(rows, verdicts, strict=True) if v is not None]
    offered = streams * 1000 / step_ms
    return {
        "streams": streams,
        "stream_interval": interval or 1,
        "step_ms_asked": step_ms,
        "step_ms_median": round(found["step_ms_median"] or 0, 2),
        "tokens": tokens,
        "tokens_per_s": round(tokens / wall),
        "offered_tokens_per_s": round(offered),
        "client_cpu_us_per_token": round(cpu * 1e6 / max(1, tokens), 2),
        "client_cpu_share_of_one_core": round(cpu / wall, 3),
        "loops": len(after),
        "loops_stopped": sum(1 for r in results if r.aborted),
        "tokens_after_verdict": {
            "median": statistics.median(after) if after else None,
            "max": max(after) if after else None,
            "per_loop": after,
        },
    }


def run_arm_in_process(
    scripts: list[Script], streams: int, pages: int, step_ms: float, interval: int | None
) -> dict[str, Any]:
    """`run_arm` in a fresh worker process, as a worker starts: arms run one after another
    in one process inherited each other's threads and heap (the second arm's first loops
    were stopped 60-120 tokens late, whichever arm came second)."""
    arguments = {
        "scripts": [s.as_json() for s in scripts],
        "streams": streams,
        "pages": pages,
        "step_ms": step_ms,
        "interval": interval,
    }
    done = subprocess.run(
        [sys.executable, "-m", "bench.stop_rates.client_load"],
        input=json.dumps(arguments),
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
        timeout=1800,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    arguments = json.load(sys.stdin)
    scripts = [Script("", s["pieces"], s["verdict"]) for s in arguments.pop("scripts")]
    print(json.dumps(run_arm(scripts, **arguments)))


if __name__ == "__main__":
    main()
