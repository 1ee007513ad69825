"""`python -m bench [NAME] [--quick]`: run one benchmark, or all of them and a summary.

Every benchmark is a `main(argv)` in a module of the registry below; add one by adding an
entry. Modules are imported when their benchmark runs, so `python -m bench gpu` needs only
torch on a bare GPU machine.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

Bench = Callable[[Sequence[str] | None], dict[str, Any] | None]

# name -> module whose main(argv) runs it
BENCHES: dict[str, str] = {
    "rasterize": "bench.rasterize",
    "detector": "bench.detector.benchmark",
    "detector-healthy": "bench.detector.healthy",
    "detector-harvest": "bench.detector.harvest",
    "detector-grounding": "bench.detector.grounding",
    "healthy-corpus": "bench.healthy_corpus.build",
    "tax": "bench.tax.benchmark",
    "tax-validate": "bench.tax.validate",
    "tax-reestimate": "bench.tax.reestimate",
    "orchestration": "bench.orchestration.benchmark",
    "ocr": "bench.ocr.benchmark",
    "ocr-worth": "bench.ocr.worth",
    "ocr-speed": "bench.ocr.speed",
    "stops": "bench.stops.benchmark",
    "gpu": "bench.gpu.benchmark",
    "profile-images": "bench.profile_images",
    "flywheel": "bench.flywheel.run",
    "false-alarms": "bench.false_alarms.run",
    "storage": "bench.storage",
    "flywheel-arms": "bench.flywheel.arms",
    "flywheel-dose": "bench.flywheel.dose",
    "flywheel-dose-confirm": "bench.flywheel.dose_confirm",
    "flywheel-speed": "bench.flywheel.speed",
    "scale": "bench.scale.run",
    "scale-olmocr": "bench.scale.olmocr_pipeline",
    "textlayer-bomb": "bench.textlayer_bomb",
    "console": "bench.console",
    "searchable": "bench.searchable.run",
}

# Left out of a plain `python -m bench`: tax-validate repeats tax several times (~40 min);
# tax-reestimate redoes its estimate from the attempts it kept; gpu needs a GPU machine; flywheel
# and flywheel-arms train and serve several models (~30-45 min) and need the taught weights,
# flywheel-dose dozens of them (hours), flywheel-dose-confirm reads one on 6,000 pages;
# healthy-corpus rebuilds the committed corpus from git mirrors of its sources; scale runs the
# whole deployment against GPU stand-ins (~15 min); scale-olmocr runs olmOCR's own pipeline from
# its venv (bench/olmocr_pipeline_env.sh) beside it; textlayer-bomb is for a before/after pair of
# trees (`--before`); searchable runs OCRmyPDF from its venv (bench/ocrmypdf_env.sh) beside
# Folio's writer (~15 min on 2 busy cores).
NOT_IN_ALL = frozenset(
    {
        "tax-validate",
        "tax-reestimate",
        "gpu",
        "flywheel",
        "flywheel-arms",
        "flywheel-dose",
        "flywheel-dose-confirm",
        "healthy-corpus",
        "scale",
        "scale-olmocr",
        "textlayer-bomb",
        "searchable",
    }
)


def bench(name: str) -> Bench:
    main: Bench = importlib.import_module(BENCHES[name]).main
    return main


def summary_rows(name: str, report: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The headline figures of one benchmark's report, as (what, value) rows."""
    if not report:
        return []
    if name == "rasterize":
        rows = []
        for dpi, row in report["dpi"].items():
            ratio = row.get("pymupdf_over_pdftoppm")
            poppler = row.get("pdftoppm", {}).get("pages_per_s", "-")
            rows.append(
                (
                    f"rasterize {dpi} DPI (pages/s)",
                    f"PyMuPDF {row['pymupdf']['pages_per_s']} vs pdftoppm {poppler}"
                    + (f" ({ratio}x)" if ratio else ""),
                )
            )
        return rows
    if name == "detector":
        speed = report["speed"]
        rows = [("detector (chars/s, wall)", f"{speed['chars_per_second_wall']:,}")]
        if frozen := report.get("headline", {}).get("frozen"):
            rows.insert(
                0,
                (
                    f"false alarms per 1,000 harvested pages ({frozen['pages']}), "
                    f"frozen at {frozen['freeze_commit'][:7]}",
                    f"{frozen['stream_per_1000']}",
                ),
            )
        return rows
    if name == "detector-healthy":
        pooled = report["leave_one_source_out"]["pooled"]
        return [
            (
                f"detector false alarms per 1,000 real healthy pages ({pooled['pages']})",
                f"stream {pooled['stream_per_1000']} / worker {pooled['worker_per_1000']}",
            )
        ]
    if name == "orchestration":
        return [
            (
                f"orchestration {name} (pages/s, median ms/page, round trips/page)",
                f"{arm['pages_per_s']} / {arm['overhead_ms_median']} / "
                f"{arm['round_trips_per_page']}",
            )
            for name, arm in report["result"]["arms"].items()
        ]
    if name == "storage":
        return [
            (
                f"storage {kind}: cold fetch / warm cache vs local read (x)",
                f"{row['arms']['store, cold']['times_local']} / "
                f"{row['arms']['store, warm']['times_local']}",
            )
            for kind, row in report["kinds"].items()
        ]
    if name == "ocr":
        passed, sizes = report["result"]["passed"], report["result"]["sizes"]
        return [
            (f"ocr {who} (olmOCR-bench tests passed)", f"{row['total']}/{sizes['total']}")
            for who, row in passed.items()
        ]
    if name == "false-alarms":
        return [
            (f"confirming attempt, {scenario} (extra VLM tokens/page)", f"{tokens:,.0f}")
            for scenario, tokens in report["extra_vlm_tokens_per_page"].items()
        ]
    if name == "tax":
        summary = report["summary"]
        floor = summary.get("B", {}).get("server_tokens")
        return [
            (
                f"tax arm {key}: wall / tokens vs B",
                f"{_inflation(arm['inflation_over_b'])} / "
                + (_inflation(arm["server_tokens"] / floor - 1) if floor else "-"),
            )
            for key, arm in summary.items()
            if key != "B"
        ]
    return []


def _inflation(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(f"usage: python -m bench [{'|'.join(BENCHES)}] [--quick] [bench options]")
        return
    if args and not args[0].startswith("-"):
        name, rest = args[0], args[1:]
        if name not in BENCHES:
            sys.exit(f"unknown benchmark {name!r}; known: {', '.join(BENCHES)}")
        bench(name)(rest)
        return
    from rich.console import Console
    from rich.table import Table

    reports = {name: bench(name)(args) for name in BENCHES if name not in NOT_IN_ALL}
    table = Table(title="Benchmark summary")
    table.add_column("what")
    table.add_column("value", justify="right")
    for name, report in reports.items():
        for what, value in summary_rows(name, report):
            table.add_row(what, value)
    Console().print(table)


if __name__ == "__main__":
    main()
