"""`python -m bench scale [--smoke]`: Folio's whole distributed deployment (PostgreSQL, Redis,
Celery GPU and CPU workers, real PDFs rendered at the profile's size) against GPU-paced
stand-ins for vLLM (`bench.vllm_standin`).

Two parts in one run, every arm on its own database, queues, stand-ins and workers:
- the tax, side by side on `--gpus` stand-in GPUs: the no-loop floor (no page loops), no stop
  (loops run to the cap at `--loop-rate`, 2.42% as DharmaOCR measured; Folio's detector off,
  so only the judge after the cap sees them), vLLM's `repetition_detection` alone (16/4, as the
  tax bench's D16 and Folio's probe send it; Folio's detector off) and Folio's default (its
  detector and the close); wall-clock and GPU tokens against the floor. Every loop comes back
  on every read: each arm with loops runs once per `--sticky-shares` share, that share of its
  looping pages looping again at the same place on the same unit, the rest elsewhere
  (`bench.vllm_standin.answers`); pages by the step that ended them;
- scale: Folio's default against `--scale-gpus` stand-in GPUs at once.
Figures: pages a second per GPU (in GPU time: wall / `--slowdown`), the share of the 256 slots
busy while requests waited (the stand-ins' step logs), and CPU milliseconds per page by stage
(`bench/scale/stage_worker.py`; PostgreSQL backends from /proc), turned into cores per GPU.
`--slowdown K` runs the GPUs K times slower than the tables (the CPU then has K times longer per
page): on a machine with fewer cores than one GPU needs, that is how the GPU side is measured
at all; the CPU figures per page do not depend on it. Written to `bench/results/scale.json`
(`scale_smoke.json` for `--smoke`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.environment import machine_info
from bench.scale.deployment import (
    Arm,
    Deployment,
    Loops,
    Setup,
    drop_database,
    migrated_template,
)
from bench.scale.figures import against_floor, arm_figures, percent, sizing, standin_delta
from bench.scale.inputs import write_scale_pdfs

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
DHARMA_LOOP_RATE = 0.0242  # DharmaOCR: 2.42% of pages looped, +42% batch wall-clock
TARGETS = {"wall_over_floor": 0.05, "gpu_tokens_over_floor": 0.03, "slots_busy": 0.95}


DEFAULT_ARMS = ("floor", "no_stop", "server_rd", "folio")
# Of the looping pages, the share whose loop comes back at the same place on the same unit on
# every read (sticky); the rest come back elsewhere (moving): every loop comes back, the case a
# stand-in whose loops end at the first retry left out (issue 51).
STICKY_SHARES = (0.0, 0.5, 1.0)
ARMS: dict[str, tuple[str, bool, bool | None]] = {  # title, Folio's detector, the server's
    "floor": ("no-loop floor (no page loops; Folio's default stops)", True, None),
    "no_stop": ("no stop: loops run to the cap", False, False),
    "server_rd": ("vLLM repetition_detection 16/4 alone", False, True),
    "folio": ("Folio's default", True, None),
    # a floor no stop cuts short: what the pages cost with nothing to stop and no stop on
    "bare_floor": ("no-loop floor, no stop at all", False, False),
    "folio_client": ("Folio's detector and close alone", True, False),
    # Folio's default, its retries keeping the text before the loop and continuing it
    "folio_resume": ("Folio's default, retries resume past the loop", True, None),
}
FLOORS = ("floor", "bare_floor")
RESUMING = ("folio_resume",)  # arms whose VLM retries resume past the loop (resume_after_loop)


def tax_arms(
    loop_rate: float,
    keys: tuple[str, ...] = DEFAULT_ARMS,
    sticky_shares: tuple[float, ...] = (0.0,),
) -> list[Arm]:
    """The arms named in `keys`; an arm with loops once for each sticky share (`folio@0.5`),
    its other looping pages moving, or at the one share its key names (`no_stop@0.5`).
    `--arms none`: the scale run alone."""
    arms = []
    for key in keys:
        name, _, named = key.partition("@")
        if name not in ARMS:
            continue
        title, detector, server = ARMS[name]
        if name in FLOORS:
            arms.append(Arm(name, title, Loops(0.0), detector, server))
            continue
        for share in (float(named),) if named else sticky_shares:
            loops = Loops(loop_rate, share, round(1 - share, 6))
            label = f"{title}, sticky share {share:g}"
            resume = name in RESUMING
            arms.append(Arm(f"{name}@{share:g}", label, loops, detector, server, resume))
    return arms


@dataclass(frozen=True)
class Inputs:
    """What every arm shares: its pages, the warm-up job's, scratch space, the migrated
    database to copy, and how long a job may take."""

    pages: Path
    warm: Path
    scratch: Path
    template: str
    timeout_s: float


def measure(arm: Arm, setup: Setup, pages_dir: Path, inputs: Inputs) -> dict[str, Any]:
    deployment = Deployment(arm, setup, inputs.scratch, inputs.template)
    timeout_s = inputs.timeout_s
    try:
        deployment.start()
        if setup.warm:
            deployment.run_job(inputs.warm, timeout_s)
        server_before, cpu_before = deployment.standin_stats(), deployment.cpu_seconds()
        job_id = deployment.run_job(pages_dir, timeout_s)
        server_after, cpu_after = deployment.standin_stats(), deployment.cpu_seconds()
        assert deployment.drained is not None
        drained_at, server_drained = deployment.drained
        raw = {
            "job": deployment.job_rows(job_id),
            "standin": standin_delta(server_after, server_before),
            # while pages waited in Folio's queue: from the submit to the last page's claim
            "queued": {
                "wall_s": drained_at - deployment.submitted_at,
                **standin_delta(server_drained, server_before),
            },
            "cpu": {k: cpu_after[k] - cpu_before[k] for k in cpu_after},
            "max_rss_mb": cpu_after["gpu_workers_max_rss_mb"],
        }
        if deployment.filled is not None:  # the steady state: from the batch full to drained
            filled_at, server_filled = deployment.filled
            raw["steady"] = {
                "wall_s": drained_at - filled_at,
                **standin_delta(server_drained, server_filled),
            }
    finally:
        deployment.stop()
    figures = arm_figures(raw, setup.gpus, setup.slowdown, setup.max_num_seqs)
    return {"title": arm.title, "gpus": setup.gpus, "slowdown": setup.slowdown, **figures}


def run(
    args: argparse.Namespace, console: Console, keep: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """Every arm, then the scale run; `keep` gets what is measured so far after each (a long
    run cut short keeps its finished arms). With `--parallel` the arms run at once (the smoke
    run: counts, not timings, are what it checks)."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        pages_dir, scale_dir, warm_dir = scratch / "pages", scratch / "scale", scratch / "warm"
        tax_pages = write_scale_pdfs(pages_dir, args.pages) if args.arms != "none" else 0
        scale_pages = write_scale_pdfs(scale_dir, args.scale_pages) if args.scale_pages else 0
        write_scale_pdfs(warm_dir, 2 * max(1, args.scale_gpus))
        timeout = 1800 + 10 * max(tax_pages, scale_pages) * args.slowdown
        inputs = Inputs(pages_dir, warm_dir, scratch, migrated_template(), timeout)
        try:
            return _arms(args, console, keep, inputs, (tax_pages, scale_pages, scale_dir))
        finally:
            drop_database(inputs.template)


def _arms(
    args: argparse.Namespace,
    console: Console,
    keep: Callable[[dict[str, Any]], None],
    inputs: Inputs,
    sizes: tuple[int, int, Path],
) -> dict[str, Any]:
    tax_pages, scale_pages, scale_dir = sizes
    shares = sticky_shares(args.sticky_shares)
    runs: list[tuple[str, Arm, Setup, Path]] = [
        (arm.key, arm, _setup(args, args.gpus, args.slowdown), inputs.pages)
        for arm in tax_arms(args.loop_rate, tuple(args.arms.split(",")), shares)
    ]
    if scale_pages:
        setup = _setup(args, args.scale_gpus, args.scale_slowdown)
        arm = tax_arms(args.loop_rate, ("folio",), shares[:1])[0]
        runs.append(("scale", arm, setup, scale_dir))
    done: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()

    def one(key: str, arm: Arm, setup: Setup, pages: Path) -> None:
        measured = measure(arm, setup, pages, inputs)
        with lock:
            done[key] = measured
            console.print(f"{key}: {_line(measured)}")
            tax = {k: v for k, v in done.items() if k != "scale"}
            keep({"tax": tax, **({"scale": done["scale"]} if "scale" in done else {})})

    if args.parallel:
        with ThreadPoolExecutor(len(runs)) as pool:
            for future in [pool.submit(one, *r) for r in runs]:
                future.result()
    else:
        for key, arm, setup, pages in runs:
            many = scale_pages if key == "scale" else tax_pages
            with console.status(f"{key}: {many} pages on {setup.gpus} GPU(s)..."):
                one(key, arm, setup, pages)
    tax = {key: done[key] for key, *_ in runs if key != "scale"}
    for key, measured in tax.items():
        if "floor" in tax and key != "floor":
            measured["over_floor"] = against_floor(measured, tax["floor"])
        if "bare_floor" in tax and key != "bare_floor":
            measured["over_bare_floor"] = against_floor(measured, tax["bare_floor"])
    result = {"tax": tax, "scale": done.get("scale", {})}
    folio = next((key for key in tax if key.startswith("folio@")), None)
    sized = sizing(result, args.gpu, args.shape, folio) if "floor" in tax and folio else None
    return {**result, "sizing": sized}


def sticky_shares(text: str) -> tuple[float, ...]:
    """`--sticky-shares`: comma-separated shares, each in [0, 1]."""
    shares = tuple(float(part) for part in text.split(",") if part.strip())
    if not shares or any(not 0 <= share <= 1 for share in shares):
        raise SystemExit(f"--sticky-shares: shares in [0, 1], comma-separated, not {text!r}")
    return shares


def _setup(args: argparse.Namespace, gpus: int, slowdown: float) -> Setup:
    return Setup(
        gpus,
        args.gpu,
        args.shape,
        slowdown,
        args.threads_per_gpu,
        args.max_num_seqs,
        args.max_tokens,
        warm=not args.smoke,
        poll_s=0.1 if args.smoke else 0.5,
    )


def _line(arm: dict[str, Any]) -> str:
    return (
        f"{arm['pages']} pages, {arm['pages_per_s_per_gpu']} pages/s/GPU, slots busy while queued "
        f"{arm['slots_busy_while_queued']}, GPU tokens {arm['gpu_tokens']}, Folio CPU "
        f"{arm['cpu_ms_per_page_folio']} ms/page"
    )


def print_report(console: Console, report: dict[str, Any]) -> None:
    result = report["result"]
    tax = result["tax"]
    table = Table(title=f"Scale and tax ({report['setup']})")
    table.add_column("figure")
    for key in tax:
        table.add_column(key, justify="right")
    if result["scale"]:
        table.add_column(f"folio x{result['scale']['gpus']} GPUs", justify="right")
    arms = [*tax.values(), *([result["scale"]] if result["scale"] else [])]
    rows = [
        ("pages (all terminal)", lambda a: f"{a['pages']} ({a['all_terminal']})"),
        ("pages/s per GPU", lambda a: a["pages_per_s_per_gpu"]),
        ("slots busy while queued", lambda a: a["slots_busy_while_queued"]),
        ("slots busy (mean over GPU time)", lambda a: a["slots_busy_mean"]),
        ("slots asked for by Folio (running + waiting)", lambda a: a["slots_asked_mean"]),
        ("while pages queued in Folio (GPU s):", lambda a: a["while_pages_queued"]["gpu_s"]),
        *[
            (f"  slots {part}", lambda a, p=part: a["while_pages_queued"][p])
            for part in ("busy", "empty_server_prefill", "empty_folio_short", "empty_gpu_idle")
        ],
        ("  ... from the batch full (GPU s)", lambda a: _steady(a, "gpu_s")),
        ("  ... slots busy", lambda a: _steady(a, "busy")),
        ("  ... empty: server prefill", lambda a: _steady(a, "empty_server_prefill")),
        ("  ... empty: Folio short / GPU idle", lambda a: _steady(a, "empty_folio_short")),
        ("GPU busy", lambda a: a["gpu_busy"]),
        ("wall over floor", lambda a: percent(a.get("over_floor", {}).get("wall"))),
        ("GPU tokens over floor", lambda a: percent(a.get("over_floor", {}).get("gpu_tokens"))),
        (
            "loops started / degenerate attempts",
            lambda a: f"{a['loops_started']} / {a['degenerate_attempts']}",
        ),
        ("degenerate attempts at the cap", lambda a: a["degenerate_at_cap"]),
        ("tokens after close (median, max)", lambda a: _after(a["tokens_after_close"])),
        ("rasterisings a page", lambda a: a["rasters_per_page"]),
        ("GPU workers' peak memory (MB)", lambda a: a["max_rss_mb"]),
        ("Folio CPU ms/page", lambda a: a["cpu_ms_per_page_folio"]),
        *[
            (f"  {stage}", lambda a, s=stage: a["cpu_ms_per_page"][s])
            for stage in arms[0]["cpu_ms_per_page"]
        ],
        ("stand-in CPU ms/page", lambda a: a["cpu_ms_per_page_standins"]),
        ("stand-in behind (s, GPU time)", lambda a: a["standin_behind_s"]),
    ]
    for label, value in rows:
        table.add_row(label, *(str(value(a)) for a in arms))
    console.print(table)
    console.print(f"sizing (Folio's default at a full GPU's pace): {result['sizing']}")


def _steady(arm: dict[str, Any], part: str) -> Any:
    steady = arm["steady_while_pages_queued"]
    if steady is None:
        return "-"
    if part == "empty_folio_short":
        return f"{steady['empty_folio_short']} / {steady['empty_gpu_idle']}"
    return steady[part]


def _after(spread: dict[str, Any]) -> str:
    return "-" if not spread["count"] else f"{spread['median']}, {spread['max']}"


def standin_arguments(p: argparse.ArgumentParser) -> None:
    """The GPU stand-in's options, shared with `python -m bench scale-olmocr`."""
    p.add_argument("--loop-rate", type=float, default=DHARMA_LOOP_RATE)
    p.add_argument(
        "--sticky-shares",
        default=",".join(f"{share:g}" for share in STICKY_SHARES),
        help="Of the looping pages, the shares that loop again at the same place on every read "
        "(the rest loop again elsewhere), comma-separated: each arm with loops runs at each.",
    )
    p.add_argument("--gpu", choices=("h100", "h200"), default="h100")
    p.add_argument("--shape", choices=("3b", "7b"), default="7b")
    p.add_argument("--max-num-seqs", type=int, default=256)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="A small run for CI (counts, not time).")
    p.add_argument("--pages", type=int, default=500, help="Pages per tax arm.")
    p.add_argument("--scale-pages", type=int, default=1000, help="Pages of the scale run.")
    p.add_argument("--scale-gpus", type=int, default=4)
    p.add_argument("--gpus", type=int, default=4, help="Stand-in GPUs of each tax arm.")
    standin_arguments(p)
    p.add_argument("--slowdown", type=float, default=4.0, help="Tax arms: wall s per GPU s.")
    p.add_argument("--scale-slowdown", type=float, default=16.0)
    p.add_argument("--threads-per-gpu", type=int, default=288)
    p.add_argument(
        "--parallel", action="store_true", help="Run the arms at once (the smoke run does)."
    )
    p.add_argument(
        "--arms",
        default=",".join(DEFAULT_ARMS),
        help="Tax arms, comma-separated: floor, no_stop, server_rd, folio, bare_floor "
        "(no loops, no stops), folio_client (Folio's detector, no repetition_detection), "
        "folio_resume (Folio's default, its VLM retries resuming past the loop); "
        "an arm with loops runs at every --sticky-shares share, or at the one its name gives "
        "(no_stop@0.5); none: the scale run alone.",
    )
    p.add_argument(
        "--out",
        help="The results file under bench/results, or a path of its own (default scale.json, "
        "scale_smoke.json for --smoke): a run of other arms keeps the committed ones.",
    )
    p.add_argument(
        "--max-tokens", type=int, help="The endpoint's token cap (default: the profile's, 8,000)."
    )
    return p


SMOKE = {
    "pages": 16,
    "scale_pages": 8,
    "scale_gpus": 2,
    "loop_rate": 0.2,
    "sticky_shares": "1",
    "gpus": 1,
    "slowdown": 0.25,
    "scale_slowdown": 0.5,
    "threads_per_gpu": 12,
    "max_num_seqs": 8,
    "max_tokens": 1024,
    "parallel": True,
}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    console = Console()
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    code = code_state()
    out = RESULTS / (args.out or ("scale_smoke.json" if args.smoke else "scale.json"))
    out.parent.mkdir(parents=True, exist_ok=True)

    def report_of(result: dict[str, Any]) -> dict[str, Any]:
        return {
            "machine": {
                **machine_info(),
                "load_average_1m_before": round(load_before, 2),
                "load_average_1m_after": round(os.getloadavg()[0], 2),
                "minutes": round((time.monotonic() - started) / 60, 1),
            },
            "setup": dict(vars(args)),
            "code": code,
            "targets": TARGETS,
            "result": result,
        }

    def keep(partial: dict[str, Any]) -> None:
        write_json(out, report_of({**partial, "partial": True}))

    report = report_of(run(args, console, keep))
    print_report(console, report)
    write_json(out, report)
    console.print(f"Written to {out}")
    return report


def code_state() -> dict[str, Any]:
    """The commit the run started from and the files of app/ changed beside it: the workers
    import the working tree as it is when each arm starts."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--short", "app", "workers"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"head": head, "changed": changed}


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
