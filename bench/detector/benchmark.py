"""Benchmark of the degeneration detector: accuracy, streaming speed, latency.

Run `python -m bench detector` from the repository root. Three parts read the shared corpus
(`$FOLIO_SHARED_DIR`, default `<repo>/../shared`) and are skipped when it is absent:
`corpus/degeneration_dev.jsonl` (real outputs from bug reports), and the built dev set
(`bench.detector.loop_shapes`: loop shapes made from real healthy OCR text, and those healthy texts:
ground truths, olmOCR outputs, Folio's text layer and Tesseract). Speed and the dev set are
measured side by side with the detector before issue 13 (`bench.detector.baseline`, read from
git). Results are printed and written to `bench/results/detector.json`.
"""

import argparse
import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import app.degeneration
from app.degeneration import LoopDetector, score_output
from app.degeneration.offline import run_online_detector
from bench import environment
from bench.detector.baseline import DEFAULT_REF, BaselineUnavailable, load_baseline
from bench.detector.continued import continue_loop, evaluate_continued
from bench.detector.corpus import (
    evaluate_corpus_heldout,
    false_alarms,
    implied_precision,
    page_config,
    stops,
)
from bench.detector.devset_sources import healthy_texts, loop_prefixes
from bench.detector.headline import headline, headline_table
from bench.detector.heldout import evaluate_heldout, family_table, heldout_table, load_samples
from bench.detector.loop_shapes import build_samples
from bench.detector.mixed_text import WORDS, chunks, mixed_text, prose
from bench.detector.shapes import evaluate_healthy, evaluate_shapes, healthy_table, shape_table
from bench.detector.short_loops import evaluate_short_loops, short_loop_table
from bench.detector.tradeoff import evaluate_tradeoff
from bench.environment import machine_info, shared_dir
from bench.healthy_corpus.corpus import load_loops, load_pages

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results" / "detector.json"
# The detector before issue 39 (main when it was filed): "today" in the real-data figures.
TODAY_REF = "140ea26c49059ac42a578ba1aa1c763e57ae268c"
# The detector before issue 32 (per-family rules), judged held out beside the current one.
HELDOUT_REF = "cf3ba48c1b29fe15f022e20a23155e2a10e712c4"
METHODS = ("online", "crep", "combined")


def evaluate_corpus(path: Path) -> dict[str, Any]:
    """Recall (degenerate) and false-positive rate (healthy) per method, overall and per kind."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    outcomes = []
    for row in rows:
        score = score_output(row["text"])
        flags = {
            "online": run_online_detector(row["text"]) is not None,
            "crep": score.crep_degenerate,
            "combined": score.degenerate,
        }
        outcomes.append({"id": row["id"], "label": row["label"], "kind": row["kind"], **flags})
    return {"overall": _rates(outcomes), "per_kind": _per_kind(outcomes), "samples": outcomes}


def _rates(outcomes: list[dict[str, Any]]) -> dict[str, dict[str, float | int | None]]:
    degenerate = [o for o in outcomes if o["label"] == "degenerate"]
    healthy = [o for o in outcomes if o["label"] == "healthy"]
    rates: dict[str, dict[str, float | int | None]] = {}
    for method in METHODS:
        caught = sum(o[method] for o in degenerate)
        flagged = sum(o[method] for o in healthy)
        rates[method] = {
            "recall": round(caught / len(degenerate), 4) if degenerate else None,
            "false_positive_rate": round(flagged / len(healthy), 4) if healthy else None,
            "degenerate": len(degenerate),
            "healthy": len(healthy),
        }
    return rates


def _per_kind(outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kinds = sorted({(o["label"], o["kind"]) for o in outcomes})
    return [
        {
            "label": label,
            "kind": kind,
            **_rates([o for o in outcomes if (o["label"], o["kind"]) == (label, kind)]),
        }
        for label, kind in kinds
    ]


def measure_speed(size: int, chunk_size: int, package: Any = app.degeneration) -> dict[str, Any]:
    """Stream `size` characters of mixed text in `chunk_size` chunks; reset after each loop."""
    text = mixed_text(size)
    pieces = list(chunks(text, chunk_size))
    detector = package.LoopDetector()
    loops = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for piece in pieces:
        if detector.feed(piece) is not None:
            loops += 1
            detector.reset()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "chars": len(text),
        "chunk_chars": chunk_size,
        "verdicts": loops,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "chars_per_second_wall": round(len(text) / wall),
        "chars_per_second_cpu": round(len(text) / cpu),
    }


def measure_latency(periods: tuple[int, ...] = (1, 2, 5, 13, 40, 100, 300, 1000)) -> list[dict]:
    """Characters streamed after a loop starts until the detector fires (16-char chunks)."""
    results = []
    for period in periods:
        rng = random.Random(period)
        unit = "!" if period == 1 else _unit(rng, period)
        prefix = prose(rng)
        text = prefix + unit * (4 + 5000 // period)
        detector = LoopDetector()
        fired_at = next(
            (detector.text_length for piece in chunks(text, 16) if detector.feed(piece)), None
        )
        latency = None if fired_at is None else fired_at - len(prefix)
        bound = 3 * period + 64
        results.append(
            {
                "period": period,
                "latency_chars": latency,
                "bound_chars": bound,
                "within": latency is not None and latency <= bound,
                "verdict": None if detector.verdict is None else asdict(detector.verdict),
            }
        )
    return results


def _unit(rng: random.Random, period: int) -> str:
    unit = ""
    while len(unit) < period:
        unit += rng.choice(WORDS) + rng.choice([" ", " ", ", ", "\n"])
    return unit[:period]


def print_report(console: Console, report: dict[str, Any]) -> None:
    heldout = report.get("heldout")
    if heldout is not None:
        console.print(heldout_table(heldout, report.get("heldout_baseline")))
        console.print(family_table(heldout))
        console.print(f"Missed held out: {', '.join(heldout['missed_held_out']) or 'none'}")
        console.print(
            f"False positives held out: {', '.join(heldout['false_positives_held_out']) or 'none'}"
        )
    if report.get("heldout_only"):
        return
    if report.get("real"):
        print_real(console, report["real"])
    if report.get("real_only"):
        _print_speed(console, report)
        return
    corpus = report.get("corpus")
    if corpus is None:
        console.print(f"[yellow]Corpus skipped[/]: {report['corpus_skipped']}")
    else:
        console.print(_corpus_table(corpus))
    devset = report.get("devset")
    if devset is not None:
        console.print(shape_table(devset["shapes"], devset.get("baseline_shapes")))
        console.print(healthy_table(devset["healthy"], devset.get("baseline_healthy")))
    if report.get("short_loops"):
        console.print(short_loop_table(report["short_loops"]))
    _print_speed(console, report)
    latency = Table(title="Latency on synthetic loops (16-char chunks)")
    for column in ("period", "latency chars", "bound 3p+64", "within"):
        latency.add_column(column, justify="right")
    for row in report["latency"]:
        cells = (row["period"], row["latency_chars"], row["bound_chars"], row["within"])
        latency.add_row(*map(str, cells))
    console.print(latency)


def _print_speed(console: Console, report: dict[str, Any]) -> None:
    speed = report["speed"]
    console.print(
        f"[bold]Speed[/]: {speed['chars']:,} chars in {speed['chunk_chars']}-char chunks: "
        f"{speed['chars_per_second_wall'] / 1e6:.2f} M chars/s wall, "
        f"{speed['chars_per_second_cpu'] / 1e6:.2f} M chars/s CPU "
        f"({speed['verdicts']} verdicts, detector reset after each)"
    )
    old = speed.get("baseline")
    if old:
        console.print(
            f"[bold]Baseline {report.get('baseline_ref', '')[:12]}[/]: "
            f"{old['chars_per_second_cpu'] / 1e6:.2f} M chars/s CPU "
            f"({old['verdicts']} verdicts); new / before = {speed['new_over_baseline_cpu']}"
        )


def print_real(console: Console, real: dict[str, Any]) -> None:
    """Issue 39's four figures, before and after, and the trade-off."""
    table = Table(title=f"Real data: today ({real['today_ref'][:8]}) / this detector")
    for column in ("figure", "today", "now", "target"):
        table.add_column(column, justify="right")
    held = real["healthy_corpus"]["held_out"]
    today = real.get("healthy_corpus_today") or {}
    cont, cont_today = real["continued"], real.get("continued_today") or {}
    rows = [
        ("false alarms / 1,000 pages (held out)", today.get("per_1000"), held["per_1000"], "<= 1"),
        ("continued real loops caught", cont_today.get("recall"), cont["recall"], ">= 0.99"),
        ("median chars to verdict", cont_today.get("median_chars"), cont["median_chars"], ""),
        ("p90 chars to verdict", cont_today.get("p90_chars"), cont["p90_chars"], "<= 1,000"),
        (
            "folio scan (online + offline) / 1,000 pages",
            (real.get("scan_today") or {}).get("per_1000"),
            (real.get("scan") or {}).get("per_1000"),
            "",
        ),
        (
            "implied precision at 2.42% loops",
            real.get("implied_precision_today"),
            real.get("implied_precision_new"),
            "",
        ),
    ]
    for name, before, now, target in rows:
        table.add_row(name, str(before), str(now), target)
    console.print(table)
    trade = Table(title="Trade-off per 1,000 pages (token-slots: delay + false-alarm retries)")
    for column in ("setting", "FA/1000", "recall", "median", "p90", "delay slots", "FA slots"):
        trade.add_column(column, justify="right")
    for row in real["tradeoff"]:
        trade.add_row(
            row["setting"],
            str(row["false_alarms_per_1000"]),
            str(row["recall"]),
            str(row["median_chars"]),
            str(row["p90_chars"]),
            str(row["delay_token_slots_per_1000_pages"]),
            str(row["false_alarm_token_slots_per_1000_pages"]),
        )
    console.print(trade)


def _corpus_table(corpus: dict[str, Any]) -> Table:
    table = Table(title="Dev corpus: recall (degenerate) / false-positive rate (healthy)")
    table.add_column("label")
    table.add_column("kind", no_wrap=True, overflow="ellipsis", max_width=56)
    for method in METHODS:
        table.add_column(method, justify="right")
    rows = [{"label": "ALL", "kind": "", **corpus["overall"]}, *corpus["per_kind"]]
    for row in rows:
        cells = [_rate_cell(row[method], row["label"]) for method in METHODS]
        table.add_row(row["label"], row["kind"], *cells)
    return table


def _rate_cell(rates: dict[str, Any], label: str) -> str:
    recall, fpr = rates["recall"], rates["false_positive_rate"]
    if label == "degenerate":
        return f"R {recall:.2f}"
    if label == "healthy":
        return f"FP {fpr:.2f}"
    return f"R {recall:.2f} / FP {fpr:.2f}"


def evaluate_devset(shared: Path, per_shape: int, baseline: Any) -> dict[str, Any]:
    """Per-shape recall and latency, and false alarms on healthy outputs, both versions."""
    cache = RESULTS.parent / "cache"
    healthy = healthy_texts(shared, cache)
    samples = build_samples(healthy + loop_prefixes(shared), per_shape=per_shape)
    report: dict[str, Any] = {
        "shapes": evaluate_shapes(app.degeneration, samples),
        "healthy": evaluate_healthy(app.degeneration, healthy),
    }
    if baseline is not None:
        report["baseline_shapes"] = evaluate_shapes(baseline, samples)
        report["baseline_healthy"] = evaluate_healthy(baseline, healthy)
    return report


def compare_speed(size: int, chunk: int, baseline: Any, rounds: int = 3) -> dict[str, Any]:
    """Both versions on the same text, interleaved; the best CPU rate of each."""
    runs: dict[str, list[dict[str, Any]]] = {"new": [], "baseline": []}
    for _ in range(rounds):
        runs["new"].append(measure_speed(size, chunk))
        if baseline is not None:
            runs["baseline"].append(measure_speed(size, chunk, baseline))
    best = {k: max(v, key=lambda r: r["chars_per_second_cpu"]) for k, v in runs.items() if v}
    ratio = None
    if "baseline" in best:
        ratio = round(
            best["new"]["chars_per_second_cpu"] / best["baseline"]["chars_per_second_cpu"], 3
        )
    return {**best["new"], "baseline": best.get("baseline"), "new_over_baseline_cpu": ratio}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench detector", description=__doc__)
    parser.add_argument("--size-mb", type=float, default=10.0, help="mixed text to stream")
    parser.add_argument("--chunk", type=int, default=16, help="characters per fed chunk")
    parser.add_argument("--per-shape", type=int, default=24, help="dev-set samples per shape")
    parser.add_argument("--baseline-ref", default=DEFAULT_REF, help="git revision to compare")
    parser.add_argument("--quick", action="store_true", help="1 MB, 4 samples per shape")
    parser.add_argument(
        "--heldout-ref", default=HELDOUT_REF, help="git revision judged held out beside"
    )
    parser.add_argument(
        "--heldout-only", action="store_true", help="only the held-out real-data table"
    )
    parser.add_argument(
        "--real-only",
        action="store_true",
        help="only the real-data figures: healthy corpus held out, continued real loops, "
        "trade-off, speed against --today-ref",
    )
    parser.add_argument("--today-ref", default=TODAY_REF, help="git revision of 'before'")
    args = parser.parse_args(argv)
    if args.heldout_only:
        return _heldout_only(args.heldout_ref)
    if args.real_only:
        return _real_only(args.today_ref, 1.0 if args.quick else 2.0, args.chunk)
    size_mb = 1.0 if args.quick else args.size_mb
    per_shape = 4 if args.quick else args.per_shape
    report: dict[str, Any] = {"machine": machine_info(), "headline": headline()}
    Console().print(headline_table(report["headline"]))
    try:
        baseline = load_baseline(REPO, args.baseline_ref)
        report["baseline_ref"] = args.baseline_ref
    except BaselineUnavailable as exc:
        baseline, report["baseline_skipped"] = None, str(exc)
    shared = shared_dir()
    corpus_file = shared / "corpus" / "degeneration_dev.jsonl"
    if corpus_file.is_file():
        report.update(evaluate_real(shared, args.heldout_ref))
        report["corpus"] = evaluate_corpus(corpus_file)
        report["devset"] = evaluate_devset(shared, per_shape, baseline)
        report["short_loops"] = evaluate_short_loops(app.degeneration, baseline)
    else:
        report["corpus_skipped"] = f"{corpus_file} not found"
    report["real"] = evaluate_real_data(shared, args.today_ref)
    report["speed"] = compare_speed(int(size_mb * 1_000_000), args.chunk, baseline)
    report["latency"] = measure_latency()
    return _print_and_save(report, RESULTS)


def evaluate_real(shared: Path, ref: str) -> dict[str, Any]:
    """Leave-one-source-out on the real samples, this detector and the one at `ref`."""
    samples = load_samples(shared / "corpus")
    report: dict[str, Any] = {"heldout": evaluate_heldout(app.degeneration, samples)}
    try:
        before = load_baseline(REPO, ref)
    except BaselineUnavailable as exc:
        report["heldout_baseline_skipped"] = str(exc)
    else:
        report["heldout_baseline"] = evaluate_heldout(before, samples)
        report["heldout_baseline_ref"] = ref
    return report


def evaluate_real_data(shared: Path, today_ref: str) -> dict[str, Any]:
    """Issue 39's figures, this detector beside the one at `today_ref`: false alarms per
    1,000 healthy corpus pages (held out by source), real loops continued to the cap, the
    precision they imply at the DharmaOCR loop rate, and the delay / false-alarm trade-off."""
    pages = load_pages()
    samples = load_samples(shared / "corpus") if (shared / "corpus").is_dir() else []
    loops = [continue_loop(s) for s in samples if s.label == "degenerate"]
    try:
        today = load_baseline(REPO, today_ref)
    except BaselineUnavailable as exc:
        today = None
        skipped = str(exc)
    report: dict[str, Any] = {"today_ref": today_ref, "corpus_pages": len(pages)}
    report["healthy_corpus"] = evaluate_corpus_heldout(app.degeneration, pages)
    report["continued"] = evaluate_continued(app.degeneration, loops)
    if today is None:
        report["today_skipped"] = skipped
    else:
        report["healthy_corpus_today"] = false_alarms(today, pages)
        report["continued_today"] = evaluate_continued(today, loops)
        # As `folio scan` judges a finished page: the online verdict plus the offline signals.
        report["scan_today"] = _scan_summary(false_alarms(today, pages, offline=True))
    report["scan"] = _scan_summary(false_alarms(app.degeneration, pages, offline=True))
    for who, corpus, continued in (
        ("new", report["healthy_corpus"]["held_out"], report["continued"]),
        ("today", report.get("healthy_corpus_today"), report.get("continued_today")),
    ):
        if corpus is not None and continued is not None:
            fpr = corpus["flagged"] / corpus["pages"]
            report[f"implied_precision_{who}"] = implied_precision(continued["recall"], fpr)
    # Pages collected as healthy that were read and found to loop: caught as they are.
    corpus_loops = load_loops()
    report["corpus_loops"] = {
        "pages": len(corpus_loops),
        "caught": sum(
            stops(app.degeneration, p["text"], page_config(app.degeneration, p, {})) is not None
            for p in corpus_loops
        ),
    }
    report["tradeoff"] = evaluate_tradeoff(app.degeneration, pages, loops, today)
    return report


def _scan_summary(alarms: dict[str, Any]) -> dict[str, Any]:
    return {k: alarms[k] for k in ("pages", "flagged", "per_1000", "per_source")}


def _real_only(today_ref: str, size_mb: float, chunk: int) -> dict[str, Any]:
    report: dict[str, Any] = {"machine": machine_info(), "real_only": True}
    report["real"] = evaluate_real_data(shared_dir(), today_ref)
    try:
        today = load_baseline(REPO, today_ref)
    except BaselineUnavailable:
        today = None
    report["speed"] = compare_speed(int(size_mb * 1_000_000), chunk, today)
    report["baseline_ref"] = today_ref
    return _print_and_save(report, RESULTS.with_name("detector_real.json"))


def _heldout_only(ref: str) -> dict[str, Any]:
    report: dict[str, Any] = {"machine": machine_info(), "heldout_only": True}
    corpus = shared_dir() / "corpus"
    if not (corpus / "degeneration_dev.jsonl").is_file():
        report["corpus_skipped"] = f"{corpus} has no degeneration_dev.jsonl"
        Console().print(f"[yellow]Skipped[/]: {report['corpus_skipped']}")
        return report
    report.update(evaluate_real(shared_dir(), ref))
    return _print_and_save(report, RESULTS.with_name("detector_heldout.json"))


def _print_and_save(report: dict[str, Any], path: Path) -> dict[str, Any]:
    console = Console()
    console.print(f"[bold]Machine[/]: {environment.describe(report['machine'])}")
    print_report(console, report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    console.print(f"Results written to {path.relative_to(REPO)}")
    return report


if __name__ == "__main__":
    main()
