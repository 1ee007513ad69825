"""Degeneration tax on a real vLLM server: how much looping pages inflate a batch, and how
much of it Folio's online detection + abort + retry removes.

Run `python -m bench tax [--quick]`. Starts one vLLM CPU server on the tiny model
(tests/vllm_cpu) with `--max-num-seqs` small so requests compete for batch slots, runs the
arms A-D interleaved and repeated, prints a table and writes `bench/results/degeneration_tax.json`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from bench.environment import describe, machine_info, write_results
from bench.tax_run import ArmRun, run_arm
from bench.tax_summary import summarize
from bench.tax_workload import ARMS, WorkloadConfig, build_workload
from tests.vllm_cpu.server import VllmServer, default_venv, root_url_of


@dataclass(frozen=True)
class ServerConfig:
    """How the server is made to behave like a loaded GPU: few batch slots, little KV cache.

    VLLM_CPU_KVCACHE_SPACE takes whole GiB only, and 1 GiB holds 2 M tokens of the tiny model,
    so the KV cache is capped in blocks (128 tokens each on CPU) instead.
    """

    max_num_seqs: int = 8  # batch slots: a loop holds one of them until it is stopped
    kv_blocks: int = 32  # 32 x 128 = 4,096 tokens: a growing loop squeezes its neighbours
    kv_cache_gib: int = 1  # VLLM_CPU_KVCACHE_SPACE, the smallest setting

    def args(self) -> list[str]:
        return [
            "--max-num-seqs",
            str(self.max_num_seqs),
            "--num-gpu-blocks-override",
            str(self.kv_blocks),
        ]

    def env(self) -> dict[str, str]:
        return {"VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib)}


@dataclass(frozen=True)
class TaxConfig:
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    repeats: int = 2
    concurrency: int = 16  # pages in flight from the client: twice the batch slots
    arms: tuple[str, ...] = ("A", "B", "C", "D", "E")


QUICK = TaxConfig(
    workload=WorkloadConfig(pages=80, degenerate_share=0.05, max_tokens=512, median_tokens=64),
    repeats=1,
)


def arm_order(arms: Sequence[str], repeat: int) -> list[str]:
    """Forward on even repeats, backward on odd ones, so slow drift hits every arm alike."""
    return list(arms) if repeat % 2 == 0 else list(reversed(arms))


def run_benchmark(config: TaxConfig, base_url: str, console: Console) -> dict[str, Any]:
    """All arms against the OpenAI-compatible server at `base_url` (ending in /v1)."""
    pages = build_workload(config.workload)
    runs: list[ArmRun] = []
    columns = (*Progress.get_default_columns()[:2], BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console) as progress:
        for repeat in range(config.repeats):
            for key in arm_order(config.arms, repeat):
                task = progress.add_task(f"arm {key} run {repeat + 1}", total=len(pages))
                wall, tokens, page_runs = run_arm(
                    ARMS[key],
                    pages,
                    config.workload,
                    base_url,
                    config.concurrency,
                    on_page=partial(progress.advance, task),
                )
                runs.append(ArmRun(key, repeat, wall, tokens, page_runs))
    return {
        "config": asdict(config),
        "arms": {key: ARMS[key].title for key in config.arms},
        "summary": summarize(runs),
    }


def results_table(summary: dict[str, dict[str, Any]]) -> Table:
    table = Table(title="Degeneration tax (means over repeats; inflation paired per repeat vs B)")
    headers = (
        "arm",
        "wall s",
        "vs B",
        "report\nestimate",
        "healthy s\nloop beside/none",
        "ms/token\nloop beside/none",
        "tokens\n(server)",
        "loop\ntokens",
        "after\nabort",
        "loops\nrecovered",
        "healthy\nflagged",
    )
    for header in headers:
        table.add_column(header, justify="right")
    for key, arm in summary.items():
        inflation = arm["inflation_over_b"]
        beside, alone = arm["healthy_with_loop"], arm["healthy_without_loop"]
        table.add_row(
            key,
            f"{arm['wall_s']:.1f}",
            "-" if inflation is None else f"{inflation:+.1%}",
            _pct(arm["report_inflation_estimate"]),
            f"{_num(beside['mean_s'])}/{_num(alone['mean_s'])}",
            f"{_num(beside['ms_per_token'], 1)}/{_num(alone['ms_per_token'], 1)}",
            f"{arm['server_tokens']:,}",
            f"{arm['loop_tokens']:,}",
            f"{arm['abort_overshoot_tokens']:,}",
            f"{arm['pages_recovered']:g}/{arm['degenerate_pages']:g}",
            f"{arm['healthy_flagged']:g}",
        )
    return table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def parse_args(argv: Sequence[str] | None) -> tuple[TaxConfig, str | None]:
    parser = argparse.ArgumentParser(prog="python -m bench tax", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small smoke run (~1-2 min)")
    parser.add_argument("--pages", type=int, help="requests per arm (default 400)")
    parser.add_argument("--degenerate-share", type=float, help="share of looping pages (0.025)")
    parser.add_argument("--max-tokens", type=int, help="token cap a loop runs into (1024)")
    parser.add_argument("--median-tokens", type=int, help="median healthy page length (96)")
    parser.add_argument("--repeats", type=int, help="runs of each arm (default 2)")
    parser.add_argument("--max-num-seqs", type=int, help="vLLM batch slots (default 8)")
    parser.add_argument("--concurrency", type=int, help="client pages in flight (default 16)")
    parser.add_argument("--arms", help="which arms, in order (default ABCDE; B is needed)")
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
    server = ServerConfig(max_num_seqs=args.max_num_seqs or config.server.max_num_seqs)
    config = TaxConfig(
        workload=workload_config,
        server=server,
        repeats=args.repeats or config.repeats,
        concurrency=args.concurrency or config.concurrency,
        arms=tuple(args.arms.upper()) if args.arms else config.arms,
    )
    return config, args.url


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    config, url = parse_args(argv)
    console = Console(width=None if Console().is_terminal else 140)
    if url:
        report = run_benchmark(config, root_url_of(url) + "/v1", console)
    else:
        console.print(
            f"Starting vLLM (tiny model) with {' '.join(config.server.args())} "
            f"(KV cache {config.server.kv_blocks * 128:,} tokens), "
            f"VLLM_CPU_KVCACHE_SPACE={config.server.kv_cache_gib} ..."
        )
        with VllmServer(extra_args=config.server.args(), env=config.server.env()) as server:
            report = run_benchmark(config, server.base_url, console)
    report["machine"] = machine_info(default_venv(), ("httpx", "pymupdf"))
    console.print(f"[bold]Machine[/]: {describe(report['machine'])}")
    for key, title in report["arms"].items():
        console.print(f"  [bold]{key}[/] {title}")
    console.print(results_table(report["summary"]))
    path = write_results("degeneration_tax", report)
    console.print(f"Results written to {path}")
    return report


if __name__ == "__main__":
    main()
