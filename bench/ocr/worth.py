"""The fallback's worth: what the embedded default (text layer, then Tesseract) gives a page.

Run `python -m bench ocr-worth [--before REF]`. Every loop the retries do not cure ends on this
fallback, and with no GPU it is the whole product; this measures what its text is worth, on two
sets of pages from `$FOLIO_SHARED_DIR/corpus`:

- the pages that loop in the benches: the olmOCR-bench sample, whose healthy answers (olmOCR's
  own transcriptions) are what the tax, stop and detector benches build their loops from. The
  fallback's text is scored against that healthy answer: what a user keeps of it when the model
  loops on the page and the fallback answers instead;
- held-out pages with ground truth (`pdfs/manifest.jsonl`: docling's reference Markdown, and
  olmOCR's transcription of a page printed and scanned), scored against the truth.

Scores per document: word F1 (`app.textmatch`), CER, and the reference's table rows found as
rows (Markdown or HTML) in the fallback's text, also without the reference's tables of contents
written as tables (docling's convention; a reader writing them as lines cannot meet it);
overall, the mean word F1 over documents, the CER over all reference characters and the rows
found over all rows; and the same per embedded reader (text layer, Tesseract, RapidOCR) over
the documents whose every page kept that reader's text (`folio report --attempts` names it),
which is what the run report shows beside a job's pages (`app/report/fallback_worth.py`,
`--print-measured`). Each code runs as the default install does and, where the [scan] extra
is installed, with it (`... [scan]`). `--before REF` scores the code of a git ref the same
way, side by side. Reader speed is `python -m bench ocr-speed`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from app.report.fallback_worth import RAPIDOCR, TESSERACT, TEXT_LAYER, Measured, reader_of
from bench.environment import REPO, describe, machine_info, shared_dir, write_results
from bench.ocr.benchmark import SAMPLE, export_ref, run_folio, scan_extra_installed
from bench.ocr.measures import cer, rows_found, word_f1

LOOP_PAGES = "loop pages, the model's healthy answer"
HELD_OUT = "held-out pages, ground truth"
TRUTH_KINDS = (
    "docling_v2_groundtruth",
    "docling_ocr_groundtruth_tesseract",
    "olmocr_sample_dataset_transcription",
    "olmocr_sample_dataset_transcription_of_same_page",
)


@dataclass(frozen=True)
class Case:
    name: str  # the document, as the results name it
    pdf: Path
    reference: str


def loop_pages(sample: Path) -> list[Case]:
    """The sample's PDFs, each with olmOCR's healthy answer for its pages, joined."""
    cases = []
    answers = sample / "olmocr_pipeline"
    for pdf in sorted((sample / "pdfs").rglob("*.pdf")):
        stem = pdf.relative_to(sample / "pdfs").with_suffix("")
        pages = sorted(answers.glob(f"{stem}_pg*_repeat1.md"), key=_page_number)
        if pages:
            text = "\n\n".join(p.read_text(encoding="utf-8") for p in pages)
            cases.append(Case(str(stem), pdf, text))
    return cases


def held_out(corpus: Path) -> list[Case]:
    """The corpus' documents that have a ground-truth transcription."""
    cases = []
    for line in (corpus / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line) if line.strip() else {}
        if entry.get("ground_truth_type") in TRUTH_KINDS:
            truth = (corpus / entry["ground_truth"]).read_text(encoding="utf-8")
            cases.append(Case(Path(entry["file"]).stem, corpus / entry["file"], truth))
    return cases


def _page_number(path: Path) -> int:
    return int(path.name.removesuffix("_repeat1.md").rsplit("_pg", 1)[1])


@dataclass(frozen=True)
class Transcript:
    text: str  # the document's pages, joined
    readers: frozenset[str]  # the embedded readers whose text its pages kept


def transcribe(
    code: Path, cases: list[Case], work: Path, scan_extra: bool = True
) -> dict[str, Transcript]:
    """Each case's document text as `folio run` (the code under `code`) gives it."""
    inputs = work / "in"
    inputs.mkdir(parents=True)
    names = {}
    for number, case in enumerate(cases):
        names[f"doc{number:03d}"] = case.name
        shutil.copyfile(case.pdf, inputs / f"doc{number:03d}.pdf")  # a link resolves to its name
    _, _, out = run_folio(code, inputs, work, scan_extra)
    job = json.loads((out / "summary.json").read_text(encoding="utf-8"))["job_id"]
    readers = page_readers(code, work, job)
    texts = {}
    for result in out.glob("*.json"):
        if result.name == "summary.json":
            continue
        document = json.loads(result.read_text(encoding="utf-8"))
        stem = Path(document["path"]).stem
        pages = sorted(document["pages"], key=lambda page: page["number"])
        text = "\n\n".join(page["text"] or "" for page in pages)
        kept = frozenset(readers.get((stem, page["number"]), "none") for page in pages)
        texts[names[stem]] = Transcript(text, kept)
    return texts


def page_readers(code: Path, work: Path, job: str) -> dict[tuple[str, int], str]:
    """(document, page) -> the embedded reader whose text the page kept, from the job's
    attempts as `folio report --format csv --attempts` gives them."""
    env = {**os.environ, "PYTHONPATH": str(code), "FOLIO_CONFIG": str(work / "none.toml")}
    command = [sys.executable, "-c", "from app.cli.main import main; main()", "report", job]
    command += ["--format", "csv", "--attempts", "--database-url", f"sqlite:///{work / 'folio.db'}"]
    done = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True, check=True)
    readers = {}
    for attempt in csv.DictReader(io.StringIO(done.stdout)):  # in the order they were made
        reader = reader_of(attempt["engine"], attempt["model"])
        if attempt["status"] == "ok" and reader:
            readers[(attempt["document"], int(attempt["page"]))] = reader
    return readers


def score(cases: list[Case], texts: dict[str, Transcript]) -> dict[str, Any]:
    """Per document and overall: word F1, CER, table rows found; and the same per embedded
    reader, over the documents it read every page of."""
    documents: dict[str, dict[str, Any]] = {}
    for case in cases:
        transcript = texts.get(case.name, Transcript("", frozenset()))
        found, rows = rows_found(transcript.text, case.reference)
        documents[case.name] = {
            "word_f1": round(word_f1(transcript.text, case.reference), 3),
            "cer": round(cer(transcript.text, case.reference), 3),
            "table_rows": [found, rows],
            "table_rows_without_contents": list(
                rows_found(transcript.text, case.reference, contents=False)
            ),
            "reference_chars": len(" ".join(case.reference.split())),
            "readers": sorted(transcript.readers),
        }
    by_reader: dict[str, dict[str, Any]] = {}
    for reader in sorted({r for d in documents.values() for r in d["readers"]}):
        alone = {n: d for n, d in documents.items() if d["readers"] == [reader]}
        if alone:
            by_reader[reader] = {"documents": sorted(alone), **summary(list(alone.values()))}
    return {"documents": documents, **summary(list(documents.values())), "by_reader": by_reader}


def summary(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean word F1 over `documents`, CER over all their reference characters (a near-empty
    reference, a blank page, would weigh as much as a full one in a mean of rates), rows."""
    characters = sum(d["reference_chars"] for d in documents)
    edits = sum(d["cer"] * d["reference_chars"] for d in documents)
    found = sum(d["table_rows"][0] for d in documents)
    rows = sum(d["table_rows"][1] for d in documents)
    plain = [sum(d["table_rows_without_contents"][i] for d in documents) for i in (0, 1)]
    return {
        "mean_word_f1": round(sum(d["word_f1"] for d in documents) / max(1, len(documents)), 3),
        "cer": round(edits / max(1.0, characters), 3),
        "table_rows_found": [found, rows],
        "table_rows_share": round(found / rows, 3) if rows else None,
        # a table of contents written as a table (docling's convention) left out
        "table_rows_found_without_contents": plain,
    }


def run(sets: dict[str, list[Case]], before: str | None, work: Path) -> dict[str, Any]:
    """Each set through each code, as the default install runs it and, where the [scan] extra
    is installed here, with it too (named `... [scan]`), side by side in one run."""
    codes = {"folio": REPO}
    if before:
        codes[f"folio@{before}"] = export_ref(before, work / "before-code")
    installs = {"": False, " [scan]": True} if scan_extra_installed() else {"": False}
    result: dict[str, Any] = {}
    for set_name, cases in sets.items():
        result[set_name] = {}
        for (name, code), (suffix, extra) in product(codes.items(), installs.items()):
            folder = work / set_name.replace(" ", "-") / f"{name}{suffix.strip(' []')}"
            texts = transcribe(code, cases, folder, extra)
            result[set_name][name + suffix] = score(cases, texts)
    return result


def results_table(result: dict[str, Any]) -> Table:
    table = Table(title="The fallback's worth (embedded default: text layer, then Tesseract)")
    table.add_column("pages, scored against")
    table.add_column("code")
    for column in ("documents", "mean word F1", "CER", "table rows found", "without a TOC"):
        table.add_column(column, justify="right")
    for set_name, by_code in result.items():
        for code, figures in by_code.items():
            found, rows = figures["table_rows_found"]
            share = f" ({figures['table_rows_share']:.0%})" if rows else ""
            table.add_row(
                set_name,
                escape(code),
                str(len(figures["documents"])),
                f"{figures['mean_word_f1']:.3f}",
                f"{figures['cer']:.3f}",
                f"{found}/{rows}{share}",
                _share(*figures["table_rows_found_without_contents"]),
            )
    return table


def _share(found: int, rows: int) -> str:
    return f"{found}/{rows} ({found / rows:.0%})" if rows else "-"


def readers_table(result: dict[str, Any]) -> Table:
    table = Table(title="The same per embedded reader, over the documents it read every page of")
    for column in ("pages, scored against", "code", "reader", "documents", "mean word F1", "CER"):
        table.add_column(column, justify="right" if column in ("documents", "CER") else "left")
    table.add_column("table rows found", justify="right")
    for set_name, by_code in result.items():
        for code, figures in by_code.items():
            for reader, worth in figures["by_reader"].items():
                found, rows = worth["table_rows_found"]
                table.add_row(
                    set_name,
                    escape(code),
                    reader,
                    str(len(worth["documents"])),
                    f"{worth['mean_word_f1']:.3f}",
                    f"{worth['cer']:.3f}",
                    f"{found}/{rows}",
                )
    return table


def measured(result: dict[str, Any]) -> dict[str, Measured]:
    """The report's figures (`app.report.fallback_worth.MEASURED`) from a run's result: the
    text layer and Tesseract as the default install reads, RapidOCR with the [scan] extra."""
    truth, loops = result[HELD_OUT], result[LOOP_PAGES]
    figures = {}
    for reader, code in ((TEXT_LAYER, "folio"), (TESSERACT, "folio"), (RAPIDOCR, "folio [scan]")):
        held = truth.get(code, {}).get("by_reader", {}).get(reader)
        loop = loops.get(code, {}).get("by_reader", {}).get(reader)
        if held is None and loop is None:
            continue
        figures[reader] = Measured(
            documents=len(held["documents"]) if held else 0,
            word_f1=held["mean_word_f1"] if held else None,
            cer=held["cer"] if held else None,
            table_rows=tuple(held["table_rows_found"]) if held else (0, 0),
            loop_documents=len(loop["documents"]) if loop else 0,
            loop_word_f1=loop["mean_word_f1"] if loop else None,
        )
    return figures


def commit() -> str:
    """HEAD, and "+changes" where app/ differs from it (the code a run measured)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True)
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "app"], cwd=REPO).returncode
    return head.stdout.decode().strip() + ("+changes" if dirty else "")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench ocr-worth", description=__doc__)
    parser.add_argument("--before", help="also score the code of this git ref, e.g. main")
    parser.add_argument("--work", type=Path, help="keep the runs here")
    parser.add_argument("--quick", action="store_true", help="accepted for `python -m bench`")
    parser.add_argument(
        "--print-measured",
        action="store_true",
        help="print the report's MEASURED figures from the committed results, and stop",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    args = parse_args(argv)
    console = Console()
    if args.print_measured:
        committed = json.loads((REPO / "bench/results/ocr_worth.json").read_text("utf-8"))
        print(f"MEASURED_ON = {committed['machine']['when'][:10]!r}")
        print(f"MEASURED_AT = {committed.get('commit')!r}")
        print(f"MEASURED = {measured(committed['result'])!r}")
        return None
    corpus = shared_dir() / "corpus"
    if not (corpus / SAMPLE.removeprefix("corpus/") / "dataset.jsonl").is_file():
        console.print(f"ocr-worth: no shared corpus at {corpus}; skipped")
        return None
    sets = {
        LOOP_PAGES: loop_pages(corpus / "olmocr_bench_sample"),
        HELD_OUT: held_out(corpus / "pdfs"),
    }
    info = machine_info(packages=("pymupdf", "tesserocr"))
    console.print(describe(info))
    with tempfile.TemporaryDirectory(prefix="folio-ocr-worth-") as scratch:
        result = run(sets, args.before, args.work or Path(scratch))
    console.print(results_table(result))
    console.print(readers_table(result))
    report = {"machine": info, "commit": commit(), "result": result}
    console.print(f"written to {write_results('ocr_worth', report)}")
    return report
