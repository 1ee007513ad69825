"""`python -m bench tax-validate`: issue 14's evidence in one go. Several quick runs and one
full run of the degeneration-tax bench (every arm, both regimes) against one vLLM server; for
every run, regime and arm, the measured wall-clock inflation over the floor B beside what
`folio report` estimates from the same attempt rows, and the error in points.

The wall-clock is the weak part on a small machine, so these runs measure it more carefully
than the plain bench: B runs again after every few arms (`--floor-every`) and each arm is
compared with the B runs just before and after it; the spread of B's own walls is printed as
the noise floor. The shape sweep is left out (it checks stops, not the estimate). Prints the
error table in docs/benchmarks.md's column format, a per-arm summary, and writes
`bench/results/tax_validation.json`.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

from rich.console import Console

from bench.environment import machine_info, write_compressed, write_results
from bench.tax.benchmark import TaxConfig, bench_server, parse_args, run_benchmark
from bench.tax.validation_tables import (
    arm_summary,
    error_rows,
    floor_rows,
    markdown,
    stops_markdown,
)
from tests.vllm_cpu.server import VllmServer, default_venv, root_url_of

TARGET_POINTS = 10.0


def validation_configs(
    quick_runs: int,
    full_repeats: int,
    floor_every: int,
    bench_argv: Sequence[str],
) -> list[tuple[str, TaxConfig]]:
    """(run name, config) of every run: q1..qK from `--quick`, then `full` (the full
    workload, `full_repeats` times; 0: none); bench options (e.g. --pages for a smoke test)
    apply to all of them."""
    quick, _ = parse_args(["--quick", *bench_argv])
    runs = [(f"q{i + 1}", quick) for i in range(quick_runs)]
    if full_repeats:
        full, _ = parse_args([*bench_argv, "--repeats", str(full_repeats)])
        runs.append(("full", full))
    return [
        (name, replace(config, floor_every=floor_every, shape_sweep=False)) for name, config in runs
    ]


def run_validation(
    configs: list[tuple[str, TaxConfig]],
    base_url: str,
    console: Console,
    server: VllmServer | None = None,
    on_run: Callable[[dict[str, Any], list[dict[str, Any]]], object] | None = None,
) -> dict[str, Any]:
    """Every run in turn against the server at `base_url`; the figures of each (also handed
    to `on_run`, those so far and every attempt of them, after every run)."""
    runs, attempts = [], []
    for name, config in configs:
        console.print(
            f"[bold]run {name}[/]: {config.workload.pages} pages, "
            f"{config.repeats} repeat(s), B after every {config.floor_every} arms"
        )
        load_start, began = os.getloadavg()[0], time.monotonic()
        report = run_benchmark(config, base_url, console, server)
        attempts.append({"run": name, "regimes": report["runs"]})
        runs.append(
            {
                "run": name,
                "config": asdict(config),
                "seconds": round(time.monotonic() - began, 1),
                "load_average_1min": [round(load_start, 2), round(os.getloadavg()[0], 2)],
                "regimes": {
                    regime: result["summary"] for regime, result in report["regimes"].items()
                },
                "skipped_arms": report["skipped_arms"],
            }
        )
        console.print(f"run {name} done in {runs[-1]['seconds']:.0f} s")
        if on_run is not None:  # an hour of runs then survives a stop in the next one
            on_run(validation_report(runs) | {"complete": len(runs) == len(configs)}, attempts)
    return validation_report(runs) | {"complete": True}


def validation_report(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The error rows, per-arm summary and floor spread of the runs so far."""
    rows = error_rows(runs)
    return {
        "target_points": TARGET_POINTS,
        "runs": runs,
        "rows": rows,
        "by_arm": arm_summary(rows, TARGET_POINTS),
        "floor": floor_rows(runs),
    }


def parse_validation_args(
    argv: Sequence[str] | None,
) -> tuple[list[tuple[str, TaxConfig]], str | None, str]:
    parser = argparse.ArgumentParser(
        prog="python -m bench tax-validate",
        description=__doc__,
        epilog="Other options (--pages, --arms, --regimes, --repeats, ...) go to every run "
        "as in `python -m bench tax`.",
    )
    parser.add_argument("--quick-runs", type=int, default=3, help="quick runs (default 3)")
    parser.add_argument(
        "--full-repeats",
        type=int,
        default=1,
        help="repeats of the full run (default 1, ~55 min on 2 cores; 0: no full run)",
    )
    parser.add_argument(
        "--floor-every", type=int, default=3, help="run B again after every N arms (default 3)"
    )
    parser.add_argument("--url", help="use this running server (one regime: as found)")
    parser.add_argument(
        "--results",
        default="tax_validation",
        help="name of the results file, bench/results/NAME.json (default tax_validation)",
    )
    args, bench_argv = parser.parse_known_args(argv)
    configs = validation_configs(args.quick_runs, args.full_repeats, args.floor_every, bench_argv)
    return configs, args.url, args.results


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    configs, url, results = parse_validation_args(argv)
    console = Console(width=None if Console().is_terminal else 160)
    began = time.monotonic()

    def keep(report: dict[str, Any], attempts: list[dict[str, Any]]) -> None:
        write_results(results, report)
        write_compressed(f"{results}_runs", {"runs": attempts})  # to redo the estimate from

    if url:
        report = run_validation(configs, root_url_of(url) + "/v1", console, on_run=keep)
    else:
        server_config = configs[0][1].server
        with bench_server(server_config, console) as (server, where):
            report = run_validation(configs, server.base_url, console, server, keep)
            report["placement"] = where
    report["seconds"] = round(time.monotonic() - began, 1)
    report["machine"] = machine_info(default_venv(), ("httpx",))
    print(markdown(report))
    quick = [run for run in report["runs"] if run["run"] != "full"]
    for regime in quick[0]["regimes"] if quick else []:
        print(f"\n*{regime}* (the quick runs; per run in brackets)\n")
        print(stops_markdown(quick, regime))
    path = write_results(results, report)
    console.print(f"Results written to {path} ({report['seconds']:.0f} s in all)")
    return report
