"""Pages per second per core of each embedded reader, born-digital and scanned pages side by side.

Run `python -m bench ocr-speed [--pages N]`. Readers: the text layer (the gate and the
Markdown, `judge_layer`), Tesseract (`TesseractEngine`, one thread: Folio parallelises across
pages), and where the [scan] extra is installed RapidOCR (one ONNX Runtime thread) and the two
as the embedded default runs them (Tesseract, RapidOCR where Tesseract reads poorly).
Born-digital pages are the shared corpus' pages whose text layer the gate accepts (the OCR
readers read them from their image, as they read a page whose layer is refused); scanned pages
are its image-only pages. Each reader's time is the CPU time of its own work
(process time, all threads), so a loaded machine slows it less than it slows wall time; the
page's rendering at Folio's DPI is its own row.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from app.domain import PageInput
from app.pdf.render import close_documents, render_page
from app.pipeline.text_layer import judge_layer
from app.settings import PlanStep
from app.textlayer import GateConfig
from app.textlayer.words import languages_for
from bench.environment import describe, machine_info, shared_dir, write_results

DPI, MAX_SIDE = 200, 4000  # Folio's defaults (settings.dpi; a cap no corpus page reaches)
Reader = Callable[[Path, int, PageInput], str]


def corpus_pages(
    corpus: Path, per_document: int
) -> tuple[list[tuple[Path, int]], list[tuple[Path, int]]]:
    """(born-digital, image-only) pages of the shared corpus, at most `per_document` each."""
    born: list[tuple[Path, int]] = []
    scanned: list[tuple[Path, int]] = []
    for line in (corpus / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line) if line.strip() else {}
        if not entry:
            continue
        pages = [
            (corpus / entry["file"], n) for n in range(1, min(entry["pages"], per_document) + 1)
        ]
        (born if entry.get("has_text_layer") else scanned).extend(pages)
    return born, scanned


def readers() -> dict[str, Reader]:
    gate = GateConfig(languages_for("eng"))
    step = PlanStep(name="ocr", engine="tesseract")
    from app.engines.tesseract import TesseractEngine

    alone = TesseractEngine(second_reader=None)
    found: dict[str, Reader] = {
        "text layer": lambda path, number, page: (
            judge_layer(path, number, gate, True).markdown or ""
        ),
        "tesseract": lambda path, number, page: alone.transcribe(page, step).text,
    }
    from app.scanread.rapid import RapidReader

    if not RapidReader.installed():  # the [scan] extra
        return found
    rapid = RapidReader()
    both = TesseractEngine()
    found["rapidocr"] = lambda path, number, page: rapid.read(page.image).text
    found["tesseract, rapidocr where poor"] = lambda path, number, page: (
        both.transcribe(page, step).text
    )
    return found


def born_digital(pages: list[tuple[Path, int]]) -> list[tuple[Path, int]]:
    """The pages whose text layer the gate accepts."""
    gate = GateConfig(languages_for("eng"))
    accepted = [(path, n) for path, n in pages if judge_layer(path, n, gate, True).markdown]
    close_documents()
    return accepted


def measure(pages: list[tuple[Path, int]], reader: Reader | None) -> dict[str, Any]:
    """CPU seconds of `reader` (of the rendering at Folio's DPI when None) over `pages`."""
    cpu = 0.0
    for path, number in pages:
        started = time.process_time()
        rendered = render_page(path, number, DPI, MAX_SIDE)
        page = PageInput(rendered.image, rendered.text_layer, True)
        if reader is not None:
            started = time.process_time()
            reader(path, number, page)
        cpu += time.process_time() - started
    close_documents()
    return {
        "pages": len(pages),
        "cpu_seconds": round(cpu, 3),
        "pages_per_core_second": _rate(len(pages), cpu),
    }


def _rate(pages: int, cpu: float) -> float | None:
    return round(pages / cpu, 2) if pages and cpu > 0 else None


def run(corpus: Path, per_document: int, limit: int) -> dict[str, Any]:
    """Each reader over the born-digital pages (the OCR readers from their images) and over
    the scanned ones, at most `limit` of each."""
    born, scanned = corpus_pages(corpus, per_document)
    born, scanned = born_digital(born)[:limit], scanned[:limit]
    result: dict[str, Any] = {}
    for name, reader in readers().items():
        result[name] = {"born-digital": measure(born, reader)}
        if name != "text layer":
            result[name]["scanned"] = measure(scanned, reader)
    result["rendering at 200 DPI"] = {
        "born-digital": measure(born, None),
        "scanned": measure(scanned, None),
    }
    return result


def results_table(result: dict[str, Any]) -> Table:
    table = Table(title="Embedded readers: pages per second per core (CPU time)")
    table.add_column("reader")
    for kind in ("born-digital", "scanned"):
        table.add_column(f"{kind} pages", justify="right")
        table.add_column(f"{kind} pages/s/core", justify="right")
    for name, kinds in result.items():
        cells = []
        for kind in ("born-digital", "scanned"):
            figures = kinds.get(kind)
            cells += (
                [str(figures["pages"]), str(figures["pages_per_core_second"])]
                if figures
                else ["-", "-"]
            )
        table.add_row(name, *cells)
    return table


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench ocr-speed", description=__doc__)
    parser.add_argument("--pages", type=int, default=1, help="pages per corpus document")
    parser.add_argument("--limit", type=int, default=12, help="pages of each kind at most")
    parser.add_argument("--quick", action="store_true", help="4 pages of each kind")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    args = parse_args(argv)
    console = Console()
    corpus = shared_dir() / "corpus" / "pdfs"
    if not (corpus / "manifest.jsonl").is_file():
        console.print(f"ocr-speed: no shared corpus at {corpus}; skipped")
        return None
    info = machine_info(packages=("pymupdf", "tesserocr", "rapidocr", "onnxruntime"))
    console.print(describe(info))
    result = run(corpus, args.pages, 4 if args.quick else args.limit)
    console.print(results_table(result))
    report = {"machine": info, "result": result}
    console.print(f"written to {write_results('ocr_speed', report)}")
    return report
