"""`python -m bench searchable [--limit N] [--no-ocrmypdf] [--work DIR] [--arms A,B]`:
Folio's searchable PDFs beside OCRmyPDF's on the same pages (bench/searchable/pages.py),
results in bench/results/searchable.json and a table (docs/benchmarks.md carries it).

With `--work DIR` the pages and every arm's outputs stay there: arms can run as processes of
their own (`--arms folio --no-report`), and a last run measures what they wrote."""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.environment import describe, machine_info, shared_dir, write_results
from bench.searchable.arms import ARMS, Written, finished, ocrmypdf_available, run_arm
from bench.searchable.measure import page_measures
from bench.searchable.pages import BenchPage, scanned_pages, stripped_pages


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.fmean(known), 3) if known else None


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.fmean(known), 3) if known else None


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """An arm's figures over its pages: means per page, boxes pooled over words."""
    done = [r for r in rows if "word_f1" in r]
    boxed = [r for r in done if "true_words" in r]
    words = sum(r["true_words"] for r in boxed)
    summary: dict[str, Any] = {
        "pages": len(rows),
        "pages_written": len(done),
        "word_f1": round(statistics.fmean(r["word_f1"] for r in done), 4) if done else None,
        "cer": round(statistics.fmean(r["cer"] for r in done), 4) if done else None,
        "box_iou_0.5_share": round(sum(r["box_hits"] for r in boxed) / words, 4) if words else None,
        "pages_pixel_identical": sum(r["same_pixels"] for r in done),
        "size_ratio": round(
            sum(r["bytes"] for r in done) / sum(r["original_bytes"] for r in done), 4
        )
        if done
        else None,
        "size_over_original_plus_text": round(
            sum(r["bytes"] for r in done)
            / sum(r["original_bytes"] + r["text_bytes"] for r in done),
            4,
        )
        if done
        else None,
        "seconds_per_page": _mean(r.get("seconds") for r in rows),
        "cpu_seconds_per_page": _mean(r.get("cpu_seconds") for r in rows),
        "pages_timed": sum(r.get("seconds") is not None for r in rows),
    }
    kept = [r["f1_vs_kept"] for r in done if "f1_vs_kept" in r]
    if kept:
        summary["f1_vs_kept_min"] = min(kept)
        summary["f1_vs_kept_mean"] = round(statistics.fmean(kept), 4)
    return summary


def measure_arm(pages: list[BenchPage], written: dict[str, Written]) -> list[dict[str, Any]]:
    rows = []
    for page in pages:
        out = written[page.name]
        row: dict[str, Any] = {
            "page": page.name,
            "seconds": out.seconds,
            "cpu_seconds": out.cpu_seconds,
        }
        if out.pdf is not None:
            row |= page_measures(out.pdf, page.pdf, page.truth, page.words, out.kept)
        rows.append(row)
    return rows


def show(report: dict[str, Any]) -> None:
    table = Table(title="Searchable PDFs: text, boxes, size, time (bench/results/searchable.json)")
    for column in (
        "arm",
        "pages",
        "word F1",
        "CER",
        "F1 vs kept (min)",
        "boxes IoU>=0.5",
        "pixel-identical",
        "size / original",
        "s / page",
    ):
        table.add_column(column)
    for kind, arms in report["by_kind"].items():
        for arm, s in arms.items():
            table.add_row(
                f"{arm} ({kind})",
                str(s["pages_written"]),
                str(s["word_f1"]),
                str(s["cer"]),
                str(s.get("f1_vs_kept_min", "-")),
                str(s["box_iou_0.5_share"] or "-"),
                f"{s['pages_pixel_identical']}/{s['pages_written']}",
                str(s["size_ratio"]),
                str(s["seconds_per_page"]),
            )
    Console().print(table)


def main(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(prog="python -m bench searchable", description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="Born-digital pages at most.")
    parser.add_argument("--no-ocrmypdf", action="store_true", help="Leave OCRmyPDF out.")
    parser.add_argument("--out", type=Path, default=None, help="Results folder (bench/results).")
    parser.add_argument("--work", type=Path, default=None, help="Keep pages and outputs here.")
    parser.add_argument("--arms", default=",".join(ARMS), help="Arms to run, comma-separated.")
    parser.add_argument("--no-report", action="store_true", help="Run the arms, measure nothing.")
    parser.add_argument(
        "--measure-only",
        action="store_true",
        help="Run nothing: measure the pages every arm has finished in --work.",
    )
    args = parser.parse_args(argv)
    corpus = shared_dir() / "corpus" / "pdfs"
    if not corpus.is_dir():
        raise SystemExit(f"no corpus at {corpus} (FOLIO_SHARED_DIR)")
    info = machine_info(packages=("pymupdf", "tesserocr", "rapidocr"))
    arms = [a for a in args.arms.split(",") if a in ARMS]
    if args.no_ocrmypdf or not ocrmypdf_available():
        arms = [a for a in arms if a != "ocrmypdf"]
    with tempfile.TemporaryDirectory(prefix="folio-bench-searchable-") as tmp:
        work = args.work or Path(tmp)
        kinds = {
            "born-digital, text stripped": stripped_pages(corpus, work, args.limit),
            "scans with a transcription": scanned_pages(corpus, work),
        }
        pages = [p for group in kinds.values() for p in group]
        if args.measure_only:
            written = {arm: finished(arm, pages, work) for arm in arms}
            common = set.intersection(*(set(w) for w in written.values()))
            pages = [p for p in pages if p.name in common]
            kinds = {k: [p for p in group if p.name in common] for k, group in kinds.items()}
        else:
            written = {arm: run_arm(arm, pages, work) for arm in arms}
        if args.no_report:
            return None
        rows = {arm: measure_arm(pages, outputs) for arm, outputs in written.items()}
    names = {kind: {p.name for p in group} for kind, group in kinds.items()}
    report: dict[str, Any] = {
        "machine": info,
        "load_after": machine_info()["load_average"],
        "by_kind": {
            kind: {
                arm: summarise([r for r in arm_rows if r["page"] in members])
                for arm, arm_rows in rows.items()
            }
            for kind, members in names.items()
        },
        "pages": rows,
    }
    write_results("searchable", report, args.out)
    Console().print(describe(info))
    show(report)
    return report
