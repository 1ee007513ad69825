"""`python -m bench stops --gpu-rates`: Folio's loop stop at a GPU server's rates, in one run.

Thread CPU time on the CPU machine, side by side:
- engine thread: what the stop adds to each vLLM engine step at batch 64 and 256, every
  request opted in, driven as vLLM's model runner drives a logits processor
  (`bench.stops.plugin_cpu`, in the vLLM venv): today's plugin (the baseline arm) against Folio's
  client stop, which adds nothing to the engine step (the plugin installed and not asked is
  shown as the one cost a server with it still pays);
- verdicts: the detector fed token by token (the plugin) and chunk by chunk (the client, at
  each stream interval) over the dev corpus: same rows flagged, same kind and onset;
- client: one worker process running Folio's VLM engine over many concurrent streams from a
  local server that replays real pages as vLLM 0.32 formats them, a step every 8 ms (a GPU at
  batch 256): CPU per streamed token, how many such processes one GPU's ~32,000 tokens/s
  needs, and tokens generated after each verdict token, per stream interval.
Writes bench/results/stop_rates.json as each part finishes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.ocr.text import degenerate_tails, healthy_pages
from bench.stop_rates import client_load, verdicts
from bench.stop_rates.scripts import Script, load_tokenizer, script
from bench.stops.plugin_cpu import long_texts, run_in_venv
from tests.vllm_cpu.server import default_model_dir, default_venv, missing_prerequisites

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results" / "stop_rates.json"
GPU_TOKENS_PER_S = 32_000  # one H200, 3B-class VLM, batch 256 (notes/gpu.md)
CORE_BUDGET = 0.7  # a worker's share of a core that still leaves its event loop on time
MIN_AFTER_VERDICT = 80  # tokens a loop script holds after its verdict


def engine_thread(batches: Sequence[int], steps: int) -> dict[str, Any]:
    reason = missing_prerequisites()
    if reason:
        return {"skipped": reason}
    pages = [page.text for page in healthy_pages()]
    texts = long_texts(pages, len(pages), 8 * steps)
    python = default_venv() / "bin" / "python"
    per_batch = run_in_venv(python, default_model_dir(), steps, texts, *batches, timeout=900)
    return {
        batch: {
            "plugin_today_us_per_step": row["us_per_step_asked"],
            "client_stop_us_per_step": 0.0,
            "plugin_installed_not_asked_us_per_step": row["us_per_step_not_asked"],
            "steps": row["steps"],
        }
        for batch, row in per_batch.items()
    }


def replay_scripts(tokenizer: Any, loop_every: int) -> list[Script]:
    """Real healthy pages with a real loop after every `loop_every` of them."""
    healthy = [script(p.source, p.text, tokenizer) for p in healthy_pages()]
    healthy = [s for s in healthy if s.verdict is None]
    loops = [script(p.source, p.text, tokenizer) for p in degenerate_tails()]
    loops = [
        s for s in loops if s.verdict is not None and len(s.pieces) - s.verdict > MIN_AFTER_VERDICT
    ]
    mixed: list[Script] = []
    for index, page in enumerate(healthy):
        mixed.append(page)
        if loops and index % loop_every == loop_every - 1:
            mixed.append(loops[(index // loop_every) % len(loops)])
    return mixed


def client_arms(args: argparse.Namespace, tokenizer: Any) -> dict[str, Any]:
    scripts = replay_scripts(tokenizer, args.loop_every)
    arms: dict[str, Any] = {}
    for interval in args.intervals:
        arm = client_load.run_arm_in_process(
            scripts, args.streams, args.pages, args.step_ms, interval
        )
        cores = GPU_TOKENS_PER_S * arm["client_cpu_us_per_token"] / 1e6
        arm["cores_for_one_gpu"] = round(cores, 2)
        arm["worker_processes_for_one_gpu"] = math.ceil(cores / CORE_BUDGET)
        arms[str(interval)] = arm
    return arms


def write(report: dict[str, Any]) -> None:
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench stops --gpu-rates", description=__doc__)
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--steps", type=int, default=192, help="engine steps per batch")
    parser.add_argument("--intervals", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--streams", type=int, default=32, help="streams one process reads")
    parser.add_argument("--pages", type=int, default=96, help="pages per client arm")
    parser.add_argument("--step-ms", type=float, default=8.0, help="replayed step interval")
    parser.add_argument("--loop-every", type=int, default=4, help="a loop after N healthy pages")
    parser.add_argument("--skip-engine", action="store_true", help="no vLLM venv part")
    args = parser.parse_args(argv)
    tokenizer = load_tokenizer()
    report: dict[str, Any] = {"load_average_before": os.getloadavg()}
    parts = [
        (
            "engine_thread",
            lambda: (
                {"skipped": "--skip-engine"}
                if args.skip_engine
                else engine_thread(args.batches, args.steps)
            ),
        ),
        ("verdicts", lambda: verdicts.compare(tokenizer, args.intervals)),
        ("client", lambda: client_arms(args, tokenizer)),
    ]
    for name, part in parts:
        report[name] = part()
        write(report)
    report["load_average_after"] = os.getloadavg()
    write(report)
    print(json.dumps(report, indent=2))
    return report
