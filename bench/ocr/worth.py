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
rows (Markdown or HTML) in the fallback's text; overall, the mean word F1 over documents, the
CER over all reference characters and the rows found over all rows. `--before REF` scores the
code of a git ref the same way, side by side. Reader speed is `python -m bench ocr-speed`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.environment import REPO, describe, machine_info, shared_dir, write_results
from bench.ocr.benchmark import SAMPLE, export_ref, run_folio
from bench.ocr.measures import cer, rows_found, word_f1

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


def transcribe(code: Path, cases: list[Case], work: Path) -> dict[str, str]:
    """Each case's document text as `folio run` (the code under `code`) gives it."""
    inputs = work / "in"
    inputs.mkdir(parents=True)
    names = {}
    for number, case in enumerate(cases):
        names[f"doc{number:03d}"] = case.name
        shutil.copyfile(case.pdf, inputs / f"doc{number:03d}.pdf")  # a link resolves to its name
    _, _, out = run_folio(code, inputs, work)
    texts = {}
    for result in out.glob("*.json"):
        if result.name == "summary.json":
            continue
        document = json.loads(result.read_text(encoding="utf-8"))
        name = names[Path(document["path"]).stem]
        pages = sorted(document["pages"], key=lambda page: page["number"])
        texts[name] = "\n\n".join(page["text"] or "" for page in pages)
    return texts


def score(cases: list[Case], texts: dict[str, str]) -> dict[str, Any]:
    """Per document and overall: word F1, CER, table rows found."""
    documents: dict[str, dict[str, Any]] = {}
    edits = characters = 0.0
    for case in cases:
        text = texts.get(case.name, "")
        found, rows = rows_found(text, case.reference)
        length = len(" ".join(case.reference.split()))
        rate = cer(text, case.reference)
        edits, characters = edits + rate * length, characters + length
        documents[case.name] = {
            "word_f1": round(word_f1(text, case.reference), 3),
            "cer": round(rate, 3),
            "table_rows": [found, rows],
        }
    values = list(documents.values())
    found = sum(d["table_rows"][0] for d in values)
    rows = sum(d["table_rows"][1] for d in values)
    return {
        "documents": documents,
        "mean_word_f1": round(sum(d["word_f1"] for d in values) / max(1, len(values)), 3),
        # edits over all reference characters: a near-empty reference (a blank page) would
        # weigh as much as a full one in a mean of rates
        "cer": round(edits / max(1.0, characters), 3),
        "table_rows_found": [found, rows],
        "table_rows_share": round(found / rows, 3) if rows else None,
    }


def run(sets: dict[str, list[Case]], before: str | None, work: Path) -> dict[str, Any]:
    codes = {"folio": REPO}
    if before:
        codes[f"folio@{before}"] = export_ref(before, work / "before-code")
    result: dict[str, Any] = {}
    for set_name, cases in sets.items():
        result[set_name] = {}
        for name, code in codes.items():
            texts = transcribe(code, cases, work / set_name.replace(" ", "-") / name)
            result[set_name][name] = score(cases, texts)
    return result


def results_table(result: dict[str, Any]) -> Table:
    table = Table(title="The fallback's worth (embedded default: text layer, then Tesseract)")
    table.add_column("pages, scored against")
    table.add_column("code")
    for column in ("documents", "mean word F1", "CER", "table rows found"):
        table.add_column(column, justify="right")
    for set_name, by_code in result.items():
        for code, figures in by_code.items():
            found, rows = figures["table_rows_found"]
            share = f" ({figures['table_rows_share']:.0%})" if rows else ""
            table.add_row(
                set_name,
                code,
                str(len(figures["documents"])),
                f"{figures['mean_word_f1']:.3f}",
                f"{figures['cer']:.3f}",
                f"{found}/{rows}{share}",
            )
    return table


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench ocr-worth", description=__doc__)
    parser.add_argument("--before", help="also score the code of this git ref, e.g. main")
    parser.add_argument("--work", type=Path, help="keep the runs here")
    parser.add_argument("--quick", action="store_true", help="accepted for `python -m bench`")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    args = parse_args(argv)
    console = Console()
    corpus = shared_dir() / "corpus"
    if not (corpus / SAMPLE.removeprefix("corpus/") / "dataset.jsonl").is_file():
        console.print(f"ocr-worth: no shared corpus at {corpus}; skipped")
        return None
    sets = {
        "loop pages, the model's healthy answer": loop_pages(corpus / "olmocr_bench_sample"),
        "held-out pages, ground truth": held_out(corpus / "pdfs"),
    }
    info = machine_info(packages=("pymupdf", "tesserocr"))
    console.print(describe(info))
    with tempfile.TemporaryDirectory(prefix="folio-ocr-worth-") as scratch:
        result = run(sets, args.before, args.work or Path(scratch))
    console.print(results_table(result))
    report = {"machine": info, "result": result}
    console.print(f"written to {write_results('ocr_worth', report)}")
    return report
