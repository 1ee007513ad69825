"""`python -m bench stops [--quick] [--lagging]`: what each loop stop lets through, and what
Folio's vLLM plugin costs.

On one vLLM CPU test server (tiny model, VLLM_SERVER_DEV_MODE=1 for the abort route, Folio's
plugin installed by setup_env.sh), rounds interleave:
- overshoot: 8 greedy looping streams at max_tokens 2000 (a busy batch), each stopped after
  256 tokens by closing the stream, or by POST /abort_requests (read on to the server's end);
  and 8 asking for the plugin (`vllm_xargs`), read to their end. Tokens generated after the
  stop (close, abort) or after Folio's verdict on the client's text (plugin);
- plugin cost: 8 sampled, loop-free streams of 384 tokens with and without the plugin asked
  for; server tokens/s (vllm:generation_tokens_total over the batch's wall time).
`--lagging` keeps the engine at the API server's priority (the "front end lagging" regime).
Writes bench/results/engine_stops.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from tests.vllm_cpu.server import DEFAULT_ENGINE_NICE, VllmEndpoint, VllmServer
from tests.vllm_cpu.streams import (
    looping_body,
    run_concurrently,
    run_looping_batch,
    wait_until_stable,
    watch_stream,
)

RESULTS = Path(__file__).resolve().parent / "results" / "engine_stops.json"
STREAMS, CAP, STOP_AFTER, COST_TOKENS = 8, 2000, 256, 384
PLUGIN = {"folio_loop_stop": 1}


def overshoot_close(endpoint: VllmEndpoint) -> int:
    return run_looping_batch(
        endpoint, streams=STREAMS, max_tokens=CAP, stop_after=STOP_AFTER
    ).overshoot


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
        ).overshoot


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


def tokens_per_second(endpoint: VllmEndpoint, with_plugin: bool, round_index: int) -> float:
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
    began = time.monotonic()
    run_concurrently(jobs)
    wall = time.monotonic() - began
    return (endpoint.generation_tokens_total() - before) / wall


def measure(endpoint: VllmEndpoint, rounds: int) -> dict[str, Any]:
    over: dict[str, list[int]] = {
        "client_close": [],
        "abort_call": [],
        "abort_call_new_connection": [],
        "engine_plugin": [],
    }
    speed: dict[str, list[float]] = {"without": [], "with": []}
    for r in range(rounds):
        over["client_close"].append(overshoot_close(endpoint))
        over["abort_call"].append(overshoot_abort(endpoint))
        over["abort_call_new_connection"].append(overshoot_abort(endpoint, True))
        over["engine_plugin"].append(overshoot_plugin(endpoint))
        order = (False, True) if r % 2 == 0 else (True, False)
        for with_plugin in order:
            key = "with" if with_plugin else "without"
            speed[key].append(tokens_per_second(endpoint, with_plugin, r))
    cost = 1 - statistics.mean(speed["with"]) / statistics.mean(speed["without"])
    return {
        "overshoot_tokens_per_batch": over,
        "overshoot_tokens_per_stream_mean": {
            k: round(statistics.mean(v) / STREAMS, 1) for k, v in over.items()
        },
        "plugin_cost": {
            "server_tokens_per_s": {k: [round(x) for x in v] for k, v in speed.items()},
            "slowdown": round(cost, 4),
        },
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench stops", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 rounds instead of 5")
    parser.add_argument("--lagging", action="store_true", help="engine not reniced")
    args = parser.parse_args(argv)
    rounds = 2 if args.quick else 5
    nice = None if args.lagging else DEFAULT_ENGINE_NICE
    with VllmServer(env={"VLLM_SERVER_DEV_MODE": "1"}, engine_nice=nice) as server:
        endpoint = VllmEndpoint(root_url=server.root_url, server=server)
        report = {
            "regime": "front end lagging" if args.lagging else "engine reniced",
            "rounds": rounds,
            "streams": STREAMS,
            "load_average_before": os.getloadavg()[0],
            **measure(endpoint, rounds),
            "load_average_after": os.getloadavg()[0],
        }
    print(json.dumps(report, indent=2))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    return report
