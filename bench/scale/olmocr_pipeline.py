"""`python -m bench scale-olmocr`: olmOCR's own pipeline (olmocr 0.4.27 from PyPI, in the venv
`bench/olmocr_pipeline_env.sh` builds) on the scale benchmark's pages, against one GPU stand-in
run as `python -m bench scale` runs it (same `--gpu`, `--shape`, `--slowdown`, loop rate), beside
Folio's deployment on the same pages: pages a second per GPU (GPU time: wall / `--slowdown`),
GPU tokens (the stand-in's `computed_tokens`) and the tax of loops against the no-loop floor.

What olmOCR does, read in olmocr/pipeline.py (0.4.27): with `--server` it neither checks for a
GPU nor downloads the model (1424-1437); it renders every page with pdftoppm at 1288 px
(`build_page_query`, 106), at most cores - 2 at a time (87: one on a 2-core machine), sends one
non-streamed request a page (`apost`, 382) asking 8,000 tokens at temperature 0.1; an answer
that ends other than `stop` (a loop run to the cap) is invalid and retried at the next rung of
`TEMPERATURE_BY_ATTEMPT` (85: 0.1, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 1.0), one after another: the
parallel retries fire only when its own vLLM's queue reads empty (345), which an external
server never reports. The stand-in loops a page at temperature <= 0.1 (`answers.py`), so a
looping page costs olmOCR two full caps (attempts 0 and 1) before the third reads it; Folio's
own ladder and its stop decide its side. Which pages loop follows the page image's hash, and
olmOCR's PNGs (pdftoppm) are not Folio's (PyMuPDF): the two draw different pages at the same
rate, so each arm's loops are counted beside its figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.environment import machine_info
from bench.scale.deployment import (
    MODEL,
    REPO,
    Loops,
    Setup,
    _healthy,
    drop_database,
    free_port,
    migrated_template,
    standin_stats,
    start_standin,
)
from bench.scale.figures import _share, against_floor, percent, standin_delta
from bench.scale.inputs import write_scale_pdfs
from bench.scale.run import (
    RESULTS,
    Inputs,
    measure,
    standin_arguments,
    sticky_shares,
    tax_arms,
)
from tests.distributed_support import wait_until

VENV = Path(
    os.environ.get("FOLIO_OLMOCR_PIPELINE_VENV", Path.home() / ".cache/folio/olmocr-pipeline-venv")
)


def venv_python() -> Path | None:
    python = VENV / "bin" / "python"
    return python if python.exists() else None


def run_olmocr(pdfs: list[Path], setup: Setup, loops: Loops, scratch: Path) -> dict[str, Any]:
    """olmOCR's pipeline on `pdfs` against a fresh stand-in drawing `loops`; its raw readings."""
    python = venv_python()
    if python is None:
        raise SystemExit(f"no olmOCR venv at {VENV}: run bash bench/olmocr_pipeline_env.sh")
    port = free_port()
    key = f"olmocr-{loops.rate}-{loops.sticky}-{port}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    standin = start_standin(port, setup, loops, scratch / f"standin-{key}.log", env)
    try:
        wait_until(partial(_healthy, port), 120, "a GPU stand-in")
        before = standin_stats(port)
        record = scratch / f"{key}.json"
        command = [str(python), str(REPO / "bench" / "scale" / "olmocr_driver.py"), str(record)]
        command += [str(scratch / f"workspace-{key}"), "--server", f"http://127.0.0.1:{port}/v1"]
        command += ["--model", MODEL, "--pdfs", *map(str, pdfs)]
        with (scratch / f"pipeline-{key}.log").open("ab") as log:
            subprocess.run(command, cwd=scratch, stdout=log, stderr=log, check=True)
        after = standin_stats(port)
        run = json.loads(record.read_text(encoding="utf-8"))
        reasons = Counter(after["finished"]) - Counter(before["finished"])
        return {**run, "standin": standin_delta([after], [before]), "reasons": dict(reasons)}
    finally:
        standin.terminate()
        standin.wait(10)


def olmocr_figures(raw: dict[str, Any], slowdown: float, max_num_seqs: int) -> dict[str, Any]:
    """The figures `bench.scale.figures.arm_figures` gives Folio's arms, where olmOCR has them."""
    metrics, server = raw["metrics"], raw["standin"]
    pages = int(metrics.get("completed_pages", 0) + metrics.get("failed_pages", 0))
    wall = (raw["finished"] - raw["started"]) / slowdown  # in GPU time
    by_attempt = {
        k.removeprefix("finished_on_"): int(v)
        for k, v in sorted(metrics.items())
        if k.startswith("finished_on_")
    }
    return {
        "pages": pages,
        "fallback_pages": int(metrics.get("failed_pages", 0)),  # pdftotext after every rung failed
        "wall_s": round(wall, 2),
        "pages_per_s_per_gpu": round(pages / wall, 2),
        "slots_busy_mean": _share(server["slot_s"], server["gpu_s"] * max_num_seqs),
        "gpu_busy": _share(server["gpu_s"], wall),
        "gpu_tokens": server["computed_tokens"],
        "counted_tokens": server["generation_tokens"],
        "prompt_tokens": server["prompt_tokens"],
        "requests": sum(raw["reasons"].values()),
        "finish_reasons": raw["reasons"],
        "loops_started": sum(server["loops"].values()),
        "loop_shapes": server["loops"],
        "loops_by_kind": server["loop_kinds"],
        "pages_finished_on": by_attempt,
        "standin_behind_s": round(server["behind_s"] / slowdown, 2),
    }


def folio_arms(
    pages_dir: Path, setup: Setup, loop_rate: float, shares: tuple[float, ...], scratch: Path
) -> dict[str, Any]:
    """Folio's floor and default arms of `python -m bench scale` on the same pages."""
    warm = scratch / "warm"
    write_scale_pdfs(warm, 2)
    template = migrated_template()
    try:
        timeout = 1800 + 10 * 1000 * setup.slowdown
        inputs = Inputs(pages_dir, warm, scratch, template, timeout)
        arms = tax_arms(loop_rate, ("floor", "folio"), shares)
        return {f"folio_{arm.key}": measure(arm, setup, pages_dir, inputs) for arm in arms}
    finally:
        drop_database(template)


def run(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    setup = Setup(1, args.gpu, args.shape, args.slowdown, max_num_seqs=args.max_num_seqs)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        pages_dir = scratch / "pages"
        pages = write_scale_pdfs(pages_dir, args.pages)
        pdfs = sorted(pages_dir.glob("*.pdf"))
        shares = sticky_shares(args.sticky_shares)
        runs = [("olmocr_floor", Loops(0.0))]
        runs += [(f"olmocr@{s:g}", Loops(args.loop_rate, s, round(1 - s, 6))) for s in shares]
        arms: dict[str, dict[str, Any]] = {}
        for key, loops in runs:
            with console.status(f"{key}: olmOCR's pipeline on {pages} pages..."):
                raw = run_olmocr(pdfs, setup, loops, scratch)
            figures = olmocr_figures(raw, args.slowdown, args.max_num_seqs)
            arms[key] = {"loops": vars(loops), **figures}
            console.print(f"{key}: {arms[key]}")
        if not args.no_folio:
            with console.status(f"Folio's floor and default on {pages} pages..."):
                arms.update(folio_arms(pages_dir, setup, args.loop_rate, shares, scratch))
    for key, arm in arms.items():
        floor = "olmocr_floor" if key.startswith("olmocr") else "folio_floor"
        if key != floor and floor in arms:
            arm["over_floor"] = against_floor(arm, arms[floor])
    return arms


ROWS = (
    ("pages", "pages"),
    ("pages/s per GPU (GPU time)", "pages_per_s_per_gpu"),
    ("wall (GPU s)", "wall_s"),
    ("GPU tokens (computed)", "gpu_tokens"),
    ("loops started", "loops_started"),
    ("GPU busy", "gpu_busy"),
    ("slots busy (mean over GPU time)", "slots_busy_mean"),
)


def print_report(console: Console, arms: dict[str, dict[str, Any]]) -> None:
    table = Table(title="olmOCR's pipeline and Folio on the same pages and stand-in")
    table.add_column("figure")
    for key in arms:
        table.add_column(key, justify="right")
    for label, field in ROWS:
        table.add_row(label, *(str(arm.get(field, "-")) for arm in arms.values()))
    for part in ("wall", "gpu_tokens"):
        table.add_row(
            f"{part} over its floor",
            *(percent(arm.get("over_floor", {}).get(part)) for arm in arms.values()),
        )
    console.print(table)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--pages", type=int, default=80)
    standin_arguments(p)
    p.add_argument("--slowdown", type=float, default=2.0, help="Wall s per GPU s.")
    p.add_argument("--no-folio", action="store_true", help="olmOCR's arms alone.")
    p.add_argument("--out", default="scale_olmocr.json", help="The file under bench/results.")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    console = Console()
    arms = run(args, console)
    report = {
        "machine": machine_info(packages=("httpx",)),
        "olmocr": {"version": "0.4.27", "venv": str(VENV)},
        "setup": vars(args),
        "arms": arms,
    }
    print_report(console, arms)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report
