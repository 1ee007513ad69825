"""Degeneration tax on a real vLLM server: how much looping pages inflate a batch, and how
much of it each way of stopping a loop removes.

Run `python -m bench tax [--quick]`. Starts one vLLM CPU server on the tiny model
(tests/vllm_cpu) with `--max-num-seqs` small so requests compete for batch slots. Pages are
scripted (bench.scripted): healthy pages replay real OCR outputs, degenerate pages real loop
shapes, so every stop sees what it would see in production. The arms run interleaved and
repeated in two regimes: the engine reniced (the API server keeps its CPU, as on a GPU
server) and the engine starving the API server ("front end lagging"). Then every loop shape
meets every stopping arm once. Prints tables, writes `bench/results/degeneration_tax.json`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from bench.environment import describe, machine_info, write_results
from bench.scripted import ScriptedPage, abort_route, plugin_loaded
from bench.tax.run import ArmRun, load_scripts, page_image, run_arm, scripted_page
from bench.tax.shapes import shape_sweep
from bench.tax.summary import summarize
from bench.tax.tables import results_table, shape_table
from bench.tax.workload import ARMS, DEFAULT_ARMS, PageSpec, WorkloadConfig, build_workload
from tests.vllm_cpu.placement import isolate_worker
from tests.vllm_cpu.server import DEFAULT_ENGINE_NICE, VllmServer, default_venv, root_url_of

# Engine niceness per regime: reniced, the API server keeps its CPU (a GPU server's case);
# at 0 the engine starves it on 2 cores and every stop sent through it arrives late.
REGIMES = {"engine reniced": DEFAULT_ENGINE_NICE, "front end lagging": 0}


@dataclass(frozen=True)
class ServerConfig:
    """How the server is made to behave like a loaded GPU: few batch slots, little KV cache.

    VLLM_CPU_KVCACHE_SPACE takes whole GiB only, and 1 GiB holds 2 M tokens of the tiny model,
    so the KV cache is capped in blocks (128 tokens each on CPU) instead.
    """

    max_num_seqs: int = 8  # batch slots: a loop holds one of them until it is stopped
    # 80 x 128 = 10,240 tokens: a full batch of whole pages (8 x at most half the 2,048 cap,
    # plus prompts) fits, and loops running on to the cap squeeze their neighbours.
    kv_blocks: int = 80
    kv_cache_gib: int = 1  # VLLM_CPU_KVCACHE_SPACE, the smallest setting

    def args(self) -> list[str]:
        return [
            "--max-num-seqs",
            str(self.max_num_seqs),
            "--num-gpu-blocks-override",
            str(self.kv_blocks),
        ]

    def env(self) -> dict[str, str]:
        # The dev mode serves POST /abort_requests (arm C-abort); never beyond localhost.
        return {"VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib), "VLLM_SERVER_DEV_MODE": "1"}


@dataclass(frozen=True)
class TaxConfig:
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    repeats: int = 2
    concurrency: int = 16  # pages in flight from the client: twice the batch slots
    arms: tuple[str, ...] = DEFAULT_ARMS
    regimes: tuple[str, ...] = tuple(REGIMES)
    # Run the floor B again after every this many other arms (0: once per repeat): each arm is
    # then measured against the B runs next to it in time, and B's spread shows the noise.
    floor_every: int = 0
    shape_sweep: bool = True  # every loop shape against every stopping arm, once


QUICK = TaxConfig(workload=WorkloadConfig(pages=40, degenerate_share=0.1), repeats=1)


def arm_order(arms: Sequence[str], repeat: int, floor_every: int = 0) -> list[str]:
    """Forward on even repeats, backward on odd ones, so slow drift hits every arm alike;
    with `floor_every`, B first and again after every `floor_every` other arms."""
    order = list(arms) if repeat % 2 == 0 else list(reversed(arms))
    if not floor_every or "B" not in order:
        return order
    others = [key for key in order if key != "B"]
    interleaved = ["B"]
    for at in range(0, len(others), floor_every):
        interleaved += [*others[at : at + floor_every], "B"]
    # A later repeat starts where the previous one's closing B left off.
    return interleaved if repeat == 0 else interleaved[1:]


def run_regime(
    config: TaxConfig,
    arms: Sequence[str],
    pages: list[PageSpec],
    inputs: list[ScriptedPage],
    base_url: str,
    progress: Progress,
) -> dict[str, Any]:
    """Every arm, repeated, against the server as it is now; figures per arm."""
    runs: list[ArmRun] = []
    loads = [os.getloadavg()[0]]
    for repeat in range(config.repeats):
        for key in arm_order(arms, repeat, config.floor_every):
            task = progress.add_task(f"arm {key} run {repeat + 1}", total=len(pages))
            wall, tokens, page_runs, began, steps = run_arm(
                ARMS[key],
                pages,
                inputs,
                config.workload,
                base_url,
                config.concurrency,
                on_page=partial(progress.advance, task),
            )
            runs.append(ArmRun(key, repeat, wall, tokens, page_runs, began, steps))
            loads.append(os.getloadavg()[0])
    return {
        "summary": summarize(runs),
        "load_average_1min": [round(x, 2) for x in loads],
        "runs": [asdict(run) for run in runs],  # every attempt: the estimate can be redone
    }


def run_benchmark(
    config: TaxConfig, base_url: str, console: Console, server: VllmServer | None = None
) -> dict[str, Any]:
    """All arms against the scripted server at `base_url` (ending in /v1); with `server`
    (one this process started) in every regime, else in the one the server is in."""
    scripts = load_scripts(base_url, config.workload.max_tokens)
    pages = build_workload(config.workload, scripts.source_tokens, len(scripts.shapes))
    image = page_image()
    inputs = [scripted_page(page, scripts, image) for page in pages]
    arms, skipped = available_arms(config.arms, base_url)
    regimes = config.regimes if server else ("as found",)
    results: dict[str, Any] = {}
    columns = (*Progress.get_default_columns()[:2], BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console) as progress:
        for regime in regimes:
            if server:
                server.renice_engine(REGIMES[regime])
            results[regime] = run_regime(config, arms, pages, inputs, base_url, progress)
        if server:
            server.renice_engine(REGIMES[regimes[0]])
    sweep_arms = [key for key in arms if ARMS[key].retry and not ARMS[key].counterfactual]
    sweep = (
        shape_sweep(sweep_arms, scripts.shapes, config.workload, base_url, config.concurrency)
        if config.shape_sweep
        else None
    )
    return {
        "config": asdict(config),
        # Every attempt of every run, per regime (bench/results/NAME_runs.json, not committed).
        "runs": {regime: result.pop("runs") for regime, result in results.items()},
        "arms": {key: ARMS[key].title for key in arms},
        "skipped_arms": skipped,
        "healthy_sources": [page.source for page in scripts.sources],
        "regimes": results,
        # The first regime's figures (engine reniced: the GPU-like default).
        "summary": results[regimes[0]]["summary"],
        "by_shape": sweep,
    }


def available_arms(wanted: Sequence[str], base_url: str) -> tuple[list[str], dict[str, str]]:
    """The arms this server and this build can run, and why the others were left out."""
    skipped: dict[str, str] = {}
    plugin, abort = plugin_loaded(base_url), abort_route(base_url)
    for key in wanted:
        if ARMS[key].engine_plugin and not plugin:
            skipped[key] = "Folio's vLLM plugin is not loaded by this server"
        elif ARMS[key].abort_call and not abort:
            skipped[key] = "no abort route (start vLLM with VLLM_SERVER_DEV_MODE=1)"
    return [key for key in wanted if key not in skipped], skipped


def parse_args(argv: Sequence[str] | None) -> tuple[TaxConfig, str | None]:
    parser = argparse.ArgumentParser(prog="python -m bench tax", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small run (~10 min on 2 cores)")
    parser.add_argument("--pages", type=int, help="requests per arm (default 120)")
    parser.add_argument("--degenerate-share", type=float, help="share of looping pages (0.05)")
    parser.add_argument("--max-tokens", type=int, help="token cap a loop runs into (2048)")
    parser.add_argument(
        "--median-tokens",
        type=int,
        help="cut healthy pages to lengths around this median (default: whole pages)",
    )
    parser.add_argument("--kv-blocks", type=int, help="vLLM KV cache blocks of 128 tokens (80)")
    parser.add_argument("--repeats", type=int, help="runs of each arm (default 2)")
    parser.add_argument("--max-num-seqs", type=int, help="vLLM batch slots (default 8)")
    parser.add_argument("--concurrency", type=int, help="client pages in flight (default 16)")
    parser.add_argument("--arms", help=f"comma-separated, in order (default {','.join(ARMS)})")
    parser.add_argument("--regimes", help=f"comma-separated (default {','.join(REGIMES)})")
    parser.add_argument("--url", help="use this running server (e.g. http://127.0.0.1:8000)")
    args = parser.parse_args(argv)
    config = QUICK if args.quick else TaxConfig()
    workload = {
        "pages": args.pages,
        "degenerate_share": args.degenerate_share,
        "max_tokens": args.max_tokens,
        "median_tokens": args.median_tokens,
    }
    workload_config = WorkloadConfig(
        **{**asdict(config.workload), **{k: v for k, v in workload.items() if v is not None}}
    )
    server = ServerConfig(
        max_num_seqs=args.max_num_seqs or config.server.max_num_seqs,
        kv_blocks=args.kv_blocks or config.server.kv_blocks,
    )
    arms = _choices(args.arms, ARMS, "arm") or config.arms
    if "B" not in arms:
        parser.error("arm B (the floor) is needed: every figure is relative to it")
    config = TaxConfig(
        workload=workload_config,
        server=server,
        repeats=args.repeats or config.repeats,
        concurrency=args.concurrency or config.concurrency,
        arms=arms,
        regimes=_choices(args.regimes, REGIMES, "regime") or config.regimes,
    )
    return config, args.url


def _choices(value: str | None, known: dict[str, Any], what: str) -> tuple[str, ...]:
    if not value:
        return ()
    lookup = {key.lower(): key for key in known}
    chosen = tuple(lookup.get(item.strip().lower(), item.strip()) for item in value.split(","))
    unknown = [item for item in chosen if item not in known]
    if unknown:
        raise SystemExit(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return chosen


@contextmanager
def bench_server(config: ServerConfig, console: Console) -> Iterator[tuple[VllmServer, str]]:
    """The benchmark's server, its model worker alone on its core (tests/vllm_cpu/placement.py):
    (server, where its processes run)."""
    with VllmServer(extra_args=config.args(), env=config.env()) as server:
        placement = isolate_worker(server)
        where = placement.describe() if placement else "not pinned (the worker binds no core)"
        console.print(f"Placement: {where}")
        yield server, where


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    config, url = parse_args(argv)
    console = Console(width=None if Console().is_terminal else 160)
    if url:
        report = run_benchmark(config, root_url_of(url) + "/v1", console)
    else:
        console.print(
            f"Starting vLLM (tiny model) with {' '.join(config.server.args())} "
            f"(KV cache {config.server.kv_blocks * 128:,} tokens), "
            f"VLLM_CPU_KVCACHE_SPACE={config.server.kv_cache_gib} ..."
        )
        with bench_server(config.server, console) as (server, where):
            report = run_benchmark(config, server.base_url, console, server)
            report["placement"] = where
    report["machine"] = machine_info(default_venv(), ("httpx", "pymupdf"))
    console.print(f"[bold]Machine[/]: {describe(report['machine'])}")
    for key, title in report["arms"].items():
        console.print(f"  [bold]{key}[/] {title}")
    for key, reason in report["skipped_arms"].items():
        console.print(f"  [bold]{key}[/] skipped: {reason}")
    for regime, result in report["regimes"].items():
        console.print(results_table(result["summary"], regime))
        console.print(f"load average (1 min) between arms: {result['load_average_1min']}")
    if report["by_shape"]:
        console.print(shape_table(report["by_shape"]))
    write_results("degeneration_tax_runs", report.pop("runs"))
    path = write_results("degeneration_tax", report)
    console.print(f"Results written to {path} (every attempt: degeneration_tax_runs.json)")
    return report


if __name__ == "__main__":
    main()
