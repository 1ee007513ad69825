"""OCR fidelity: olmOCR-bench's official scorer on its sample, Folio beside olmOCR's outputs.

Run `python -m bench ocr [--before REF]`. Folio's `folio run` (the embedded default plan, this
working tree) transcribes the sample's PDFs; each page's Markdown is laid out as the scorer
expects, beside olmOCR's committed outputs; the unmodified scorer (`bench/olmocr_env.sh` installs
it in its own venv) judges every candidate in one run. `--before REF` also runs the code of a
git ref (e.g. `main`) the same way, for a before/after table. Timings are the wall and CPU
seconds of the whole `folio run` process (the minimum of `--repeats` runs, candidates taking
turns), side by side on the same machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.environment import REPO, describe, machine_info, shared_dir, write_results
from bench.ocr.score import (
    category_sizes,
    failures_by_candidate,
    load_dataset,
    passes_per_category,
    run_scorer,
)

SAMPLE = "corpus/olmocr_bench_sample"
ROWS = ("present", "absent", "headers_footers", "order", "table", "math", "total")


def export_ref(ref: str, into: Path) -> Path:
    """The tree of git `ref` unpacked under `into` (its code, run with this venv's packages)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


# `folio run` as `pip install -e .` installs it: the [scan] extra's packages hidden (a module
# set to None in sys.modules is one importlib.util.find_spec does not find).
_WITHOUT_SCAN_EXTRA = "import sys; sys.modules.update(rapidocr=None, onnxruntime=None); "


def scan_extra_installed() -> bool:
    return all(importlib.util.find_spec(name) for name in ("rapidocr", "onnxruntime"))


def run_folio(
    code: Path, pdfs: Path, work: Path, scan_extra: bool = True
) -> tuple[float, float, Path]:
    """Wall and CPU seconds of `folio run` on `pdfs` with the code under `code`, and its --out
    folder. CPU seconds (user + system, all threads) hold steadier than wall on a busy machine.
    `scan_extra=False` runs it as the default install does, with the [scan] extra hidden."""
    out, db = work / "out", work / "folio.db"
    env = {**os.environ, "PYTHONPATH": str(code), "FOLIO_CONFIG": str(work / "none.toml")}
    launch = ("" if scan_extra else _WITHOUT_SCAN_EXTRA) + "from app.cli.main import main; main()"
    command = [sys.executable, "-c", launch, "run", str(pdfs)]
    command += ["--out", str(out), "--database-url", f"sqlite:///{db}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode not in (0, 3):  # 3: some page failed, which the scorer will count
        raise RuntimeError(f"folio run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, cpu, out


def lay_out_pages(out: Path, pdfs: Path, candidate: Path) -> int:
    """`<pdf relpath stem>_pg<N>_repeat1.md` per page of Folio's JSON results; pages written."""
    written = 0
    for result in sorted(out.glob("*.json")):
        if result.name == "summary.json":
            continue
        document = json.loads(result.read_text(encoding="utf-8"))
        stem = Path(document["path"]).resolve().relative_to(pdfs.resolve()).with_suffix("")
        for page in document["pages"]:
            target = candidate / f"{stem}_pg{page['number']}_repeat1.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(page["text"] or "", encoding="utf-8")
            written += 1
    return written


def prepare_data_dir(sample: Path, data: Path) -> None:
    """The scorer's layout: `pdfs/`, the jsonl tests, and olmOCR's outputs as a candidate."""
    data.mkdir(parents=True)
    (data / "pdfs").symlink_to(sample / "pdfs")
    for tests in sample.glob("*.jsonl"):
        (data / tests.name).write_bytes(tests.read_bytes())
    (data / "olmocr").symlink_to(sample / "olmocr_pipeline")


def run_benchmark(
    sample: Path, before: str | None, work: Path, repeats: int = 1, scan_extra: bool = True
) -> dict[str, Any]:
    data = work / "data"
    prepare_data_dir(sample, data)
    codes = {"folio": REPO}
    if before:
        codes[f"folio@{before}"] = export_ref(before, work / "before-code")
    seconds: dict[str, list[float]] = {name: [] for name in codes}
    cpu: dict[str, list[float]] = {name: [] for name in codes}
    for repeat in range(repeats):  # the candidates take turns, so load hits them alike
        for name, code in codes.items():
            run_dir = work / f"{name.replace('@', '-')}-{repeat}"
            run_dir.mkdir()
            wall, used, out = run_folio(code, data / "pdfs", run_dir, scan_extra)
            seconds[name].append(wall)
            cpu[name].append(used)
            if repeat == 0:
                lay_out_pages(out, data / "pdfs", data / name)
    output = run_scorer(data)
    (work / "scorer.log").write_text(output, encoding="utf-8")
    tests = load_dataset(sample)
    failed = failures_by_candidate(output)
    candidates = ["olmocr", *([f"folio@{before}"] if before else []), "folio"]
    return {
        "sizes": category_sizes(tests),
        "passed": {c: passes_per_category(tests, failed.get(c)) for c in candidates},
        "failed": {c: sorted(failed.get(c) or []) for c in candidates},
        "seconds": {c: round(min(s), 2) for c, s in seconds.items()},
        "cpu_seconds": {c: round(min(s), 2) for c, s in cpu.items()},
        "pages": sum(1 for _ in (data / "folio").rglob("*.md")),
    }


def results_table(result: dict[str, Any]) -> Table:
    table = Table(title="olmOCR-bench sample, official scorer (tests passed)")
    table.add_column("test type")
    candidates = list(result["passed"])
    for candidate in candidates:
        table.add_column(candidate, justify="right")
    for row in ROWS:
        size = result["sizes"].get(row, 0)
        cells = [f"{result['passed'][c].get(row, 0)}/{size}" for c in candidates]
        table.add_row(row.replace("_", "/"), *cells)
    for key, what in (("seconds", "wall"), ("cpu_seconds", "CPU")):
        times = [f"{result[key][c]} s" if c in result.get(key, {}) else "-" for c in candidates]
        table.add_row(f"{what} time, {result['pages']} pages", *times)
    return table


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench ocr", description=__doc__)
    parser.add_argument("--sample", type=Path, default=shared_dir() / SAMPLE)
    parser.add_argument("--before", help="also score the code of this git ref, e.g. main")
    parser.add_argument("--work", type=Path, help="keep the runs and scorer log here")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per candidate (min)")
    parser.add_argument("--quick", action="store_true", help="accepted for `python -m bench`")
    parser.add_argument(
        "--default-install",
        action="store_true",
        help="run Folio as `pip install -e .` does, the [scan] extra hidden (else as installed)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    args = parse_args(argv)
    console = Console()
    if not (args.sample / "dataset.jsonl").is_file():
        console.print(f"ocr: no olmOCR-bench sample at {args.sample}; skipped")
        return None
    info = machine_info(packages=("pymupdf", "tesserocr", "wordfreq", "ftfy"))
    console.print(describe(info))
    with tempfile.TemporaryDirectory(prefix="folio-ocr-bench-") as scratch:
        work = args.work or Path(scratch)
        extra = scan_extra_installed() and not args.default_install
        result = run_benchmark(args.sample.resolve(), args.before, work, args.repeats, extra)
    console.print(results_table(result))
    report = {"machine": info, "scan_extra": extra, "result": result}
    console.print(f"written to {write_results('ocr_scan' if extra else 'ocr', report)}")
    return report
