"""`python -m bench stops [--quick] [--lagging] [--cost-only] [--pairs N]`: what each loop stop lets
through, and what Folio's vLLM plugin costs. `--gpu-rates`: the same stops at a GPU server's
rates instead (bench.stop_rates).

On one vLLM CPU test server (tiny model, VLLM_SERVER_DEV_MODE=1 for the abort route, Folio's
plugin installed by setup_env.sh), rounds interleave:
- overshoot: 8 greedy looping streams at max_tokens 2000 (a busy batch), each stopped after
  256 tokens by closing the stream, or by POST /abort_requests (read on to the server's end);
  and 8 asking for the plugin (`vllm_xargs`), read to their end. Tokens generated after the
  stop (close, abort: counted from what the server had sent when the client stopped, read or
  not) or after Folio's verdict on the client's text (plugin);
- plugin cost: loop-free batches of 8 sampled streams of 384 tokens, with and without the
  plugin asked for, in adjacent pairs whose order alternates (ABBA), so slow drifts of the
  machine's load hit both sides alike. Per pair: the ratio of server tokens/s
  (vllm:generation_tokens_total over the batch's wall time); reported as median and
  interquartile range over the pairs, beside the engine processes' CPU time per token (/proc;
  on an idle machine vLLM's busy-polling makes it track wall time). And, measured in one
  process with the vLLM venv (bench.stops.plugin_cpu), the plugin's own CPU time per token against
  the engine's time per token without it: the figure that still resolves 2% where wall
  times scatter.
`--lagging` keeps the engine at the API server's priority (the "front end lagging" regime).
Writes bench/results/engine_stops.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from bench.ocr.text import healthy_pages
from bench.stops.plugin_cpu import long_texts, run_in_venv
from tests.vllm_cpu.server import DEFAULT_ENGINE_NICE, VllmEndpoint, VllmServer
from tests.vllm_cpu.streams import (
    looping_body,
    run_concurrently,
    run_looping_batch,
    wait_until_stable,
    watch_stream,
)

RESULTS = Path(__file__).resolve().parents[1] / "results" / "engine_stops.json"
STREAMS, CAP, STOP_AFTER, COST_TOKENS = 8, 2000, 256, 384
COST_PAIRS = 12  # with/without pairs per run of --cost-only (about 4 minutes on 2 idle cores)
PLUGIN = {"folio_loop_stop": 1}


def overshoot_close(endpoint: VllmEndpoint) -> int:
    """Tokens generated after what the server had sent when each stream was closed."""
    return run_looping_batch(
        endpoint, streams=STREAMS, max_tokens=CAP, stop_after=STOP_AFTER
    ).after_stop


def overshoot_abort(endpoint: VllmEndpoint, fresh_connections: bool = False) -> int:
    """Abort calls on warm kept-alive connections (as the engine sends them), or each on a
    new connection (what a naive client does)."""
    control = httpx.Client(timeout=30)

    def abort(index: int, request_id: str, response: httpx.Response) -> bool:
        body = {"request_ids": [f"chatcmpl-{request_id}"]}
        post = partial(httpx.post, timeout=30) if fresh_connections else control.post
        post(f"{endpoint.root_url}/abort_requests", json=body).raise_for_status()
        return True

    with control:
        control.get(f"{endpoint.root_url}/health")
        return run_looping_batch(
            endpoint, streams=STREAMS, max_tokens=CAP, stop_after=STOP_AFTER, stop=abort
        ).after_stop


def overshoot_plugin(endpoint: VllmEndpoint) -> int:
    """Tokens generated after the client's detector called each loop, plus any never read."""
    before = wait_until_stable(endpoint.generation_tokens_total, hold=1.0)
    jobs = [
        partial(watch_stream, endpoint, looping_body(endpoint, i, CAP, vllm_xargs=PLUGIN))
        for i in range(STREAMS)
    ]
    results = run_concurrently(jobs)
    generated = wait_until_stable(endpoint.generation_tokens_total) - before
    unseen = int(generated) - sum(r.completion_tokens for r in results)
    after = sum(r.completion_tokens - (r.tokens_at_verdict or r.completion_tokens) for r in results)
    return after + unseen


def engine_cpu_seconds(endpoint: VllmEndpoint) -> float:
    """CPU time of the engine processes so far: less load-sensitive than tokens/s here."""
    assert endpoint.server is not None
    ticks = 0
    for pid in endpoint.server.engine_pids():
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def tokens_per_second(
    endpoint: VllmEndpoint, with_plugin: bool, round_index: int
) -> tuple[float, float]:
    """(server tokens/s, engine CPU ms per generated token) of one loop-free batch."""
    extra: dict[str, Any] = {"vllm_xargs": PLUGIN} if with_plugin else {}
    jobs = [
        partial(
            watch_stream,
            endpoint,
            looping_body(
                endpoint,
                100 + i,
                COST_TOKENS,
                temperature=0.8,
                seed=round_index * STREAMS + i,
                repetition_penalty=1.3,
                **extra,
            ),
        )
        for i in range(STREAMS)
    ]
    before = wait_until_stable(endpoint.generation_tokens_total, hold=1.0)
    cpu, began = engine_cpu_seconds(endpoint), time.monotonic()
    run_concurrently(jobs)
    wall = time.monotonic() - began
    tokens = endpoint.generation_tokens_total() - before
    return tokens / wall, (engine_cpu_seconds(endpoint) - cpu) * 1000 / tokens


def measure(endpoint: VllmEndpoint, rounds: int) -> dict[str, Any]:
    """Overshoot of each stop per batch of looping streams, `rounds` times."""
    over: dict[str, list[int]] = {
        "client_close": [],
        "abort_call": [],
        "abort_call_new_connection": [],
        "engine_plugin": [],
    }
    for _ in range(rounds):
        over["client_close"].append(overshoot_close(endpoint))
        over["abort_call"].append(overshoot_abort(endpoint))
        over["abort_call_new_connection"].append(overshoot_abort(endpoint, True))
        over["engine_plugin"].append(overshoot_plugin(endpoint))
    return {
        "overshoot_tokens_per_batch": over,
        "overshoot_tokens_per_stream_mean": {
            k: round(statistics.mean(v) / STREAMS, 1) for k, v in over.items()
        },
    }


def plugin_cost(endpoint: VllmEndpoint, pairs: int) -> dict[str, Any]:
    """Loop-free batches with and without the plugin asked for, in ABBA-ordered pairs."""
    speed: dict[str, list[float]] = {"without": [], "with": []}
    cpu_ms: dict[str, list[float]] = {"without": [], "with": []}
    for pair in range(pairs):
        order = (False, True) if pair % 2 == 0 else (True, False)
        for with_plugin in order:
            key = "with" if with_plugin else "without"
            rate, cpu = tokens_per_second(endpoint, with_plugin, pair)
            speed[key].append(rate)
            cpu_ms[key].append(cpu)
    slowdowns = [1 - w / o for w, o in zip(speed["with"], speed["without"], strict=True)]
    cpu_increases = [w / o - 1 for w, o in zip(cpu_ms["with"], cpu_ms["without"], strict=True)]
    return {
        "pairs": pairs,
        "server_tokens_per_s": {k: [round(x) for x in v] for k, v in speed.items()},
        "slowdown_per_pair": spread(slowdowns),
        "engine_cpu_ms_per_token": {k: [round(x, 3) for x in v] for k, v in cpu_ms.items()},
        "engine_cpu_increase_per_pair": spread(cpu_increases),
        "engine_us_per_token_without": round(1e6 / statistics.median(speed["without"]), 1),
    }


def spread(values: list[float]) -> dict[str, float]:
    """Median, interquartile range and extremes, as fractions."""
    q1, median, q3 = (
        statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    )
    return {
        "median": round(median, 4),
        "q1": round(q1, 4),
        "q3": round(q3, 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def plugin_cpu_in_process(server: VllmServer, engine_us_per_token: float) -> dict[str, Any]:
    """The plugin's own CPU time per token (bench.stops.plugin_cpu, in the vLLM venv), and its
    share of the engine's time per token measured on the live server without the plugin."""
    pages = [page.text for page in healthy_pages()]
    texts = long_texts(pages, STREAMS, 8 * COST_TOKENS, stride=3)
    python = server.venv / "bin" / "python"
    found = run_in_venv(python, server.model_dir, COST_TOKENS, texts, timeout=300)
    found["share_of_engine_time_per_token"] = round(
        found["us_per_token_asked"] / engine_us_per_token, 4
    )
    return found


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if "--gpu-rates" in args_in:  # the stop at a GPU server's rates: bench.stop_rates
        from bench import stop_rates

        return stop_rates.main([a for a in args_in if a != "--gpu-rates"])
    parser = argparse.ArgumentParser(prog="python -m bench stops", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 rounds instead of 5")
    parser.add_argument("--lagging", action="store_true", help="engine not reniced")
    parser.add_argument("--cost-only", action="store_true", help="only the plugin's cost")
    parser.add_argument(
        "--pairs",
        type=int,
        default=None,
        help=f"cost pairs (default {COST_PAIRS} with --cost-only, else one per round)",
    )
    parser.add_argument(
        "--gpu-rates", action="store_true", help="bench.stop_rates instead (its own options)"
    )
    args = parser.parse_args(args_in)
    rounds = 0 if args.cost_only else (2 if args.quick else 5)
    pairs = args.pairs or (COST_PAIRS if args.cost_only else rounds)
    nice = None if args.lagging else DEFAULT_ENGINE_NICE
    began = time.monotonic()
    with VllmServer(env={"VLLM_SERVER_DEV_MODE": "1"}, engine_nice=nice) as server:
        endpoint = VllmEndpoint(root_url=server.root_url, server=server)
        load_before = os.getloadavg()
        overshoot = measure(endpoint, rounds) if rounds else {}
        cost = plugin_cost(endpoint, pairs)
        cost["in_process"] = plugin_cpu_in_process(server, cost["engine_us_per_token_without"])
        report = {
            "regime": "front end lagging" if args.lagging else "engine reniced",
            "rounds": rounds,
            "streams": STREAMS,
            "load_average_before": [round(x, 2) for x in load_before],
            **overshoot,
            "plugin_cost": cost,
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "seconds": round(time.monotonic() - began),
        }
    print(json.dumps(report, indent=2))
    # One entry per kind of run (regime, cost only or not), each replaced by its next run.
    label = ("lagging" if args.lagging else "reniced") + ("_cost_only" if args.cost_only else "")
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(runs | {label: report}, indent=2) + "\n")
    return report
