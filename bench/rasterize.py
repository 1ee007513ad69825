"""Rasterisation speed: PyMuPDF (what Folio uses) vs pdf2image/pdftoppm (what olmOCR uses).

Run `python -m bench rasterize [--quick]`. Both render the same pages to RGB PIL images at
150 and 200 DPI on one thread, pdf2image one page per call (bounded memory, as olmOCR
does). PDFs come from `$FOLIO_SHARED_DIR/corpus/pdfs` when present, else are generated.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pymupdf
from PIL import Image
from rich.console import Console
from rich.table import Table

from app.pdf import samples
from bench.environment import describe, machine_info, shared_dir, write_results

DPIS = (150, 200)
Renderer = Callable[[Path, int, int], Image.Image]


def render_pymupdf(path: Path, number: int, dpi: int) -> Image.Image:
    with pymupdf.open(path) as doc:
        pixmap = doc[number - 1].get_pixmap(dpi=dpi, alpha=False)
        return Image.frombytes("RGB", (pixmap.width, pixmap.height), pixmap.samples)


def render_pdftoppm(path: Path, number: int, dpi: int) -> Image.Image:
    from pdf2image import convert_from_path

    images = convert_from_path(path, dpi=dpi, first_page=number, last_page=number)
    return images[0].convert("RGB")


RENDERERS: dict[str, Renderer] = {"pymupdf": render_pymupdf, "pdftoppm": render_pdftoppm}


def corpus_pages(folder: Path, limit: int) -> list[tuple[Path, int]]:
    """Up to `limit` (pdf, page number) pairs, spread over the PDFs that open."""
    pages: list[tuple[Path, int]] = []
    for path in sorted(folder.glob("*.pdf")):
        try:
            with pymupdf.open(path) as doc:
                count = doc.page_count
        except Exception:  # a broken corpus file is not a rasteriser benchmark
            continue
        pages.extend((path, n) for n in range(1, min(count, 5) + 1))
    return pages[:limit]


def generated_pages(folder: Path, count: int) -> list[tuple[Path, int]]:
    texts = [samples.page_text(seed) for seed in range(count)]
    digital, scanned = folder / "digital.pdf", folder / "scanned.pdf"
    digital.write_bytes(samples.born_digital_pdf(texts[: count - count // 2]))
    scanned.write_bytes(samples.scanned_pdf(texts[count - count // 2 :]))
    return [(digital, n) for n in range(1, count - count // 2 + 1)] + [
        (scanned, n) for n in range(1, count // 2 + 1)
    ]


def measure(renderer: Renderer, pages: list[tuple[Path, int]], dpi: int) -> dict[str, Any]:
    began = time.perf_counter()
    pixels = sum(renderer(path, number, dpi).width for path, number in pages)
    wall = time.perf_counter() - began
    return {
        "pages": len(pages),
        "seconds": round(wall, 3),
        "pages_per_s": round(len(pages) / wall, 2),
        "mean_width_px": round(pixels / len(pages)),
    }


def run(pages: list[tuple[Path, int]], source: str) -> dict[str, Any]:
    available = {k: r for k, r in RENDERERS.items() if k != "pdftoppm" or shutil.which("pdftoppm")}
    results: dict[str, Any] = {"source": source, "pages": len(pages), "dpi": {}}
    for dpi in DPIS:
        row = {name: measure(renderer, pages, dpi) for name, renderer in available.items()}
        if "pdftoppm" in row:
            fast, slow = row["pymupdf"]["pages_per_s"], row["pdftoppm"]["pages_per_s"]
            row["pymupdf_over_pdftoppm"] = round(fast / slow, 2)
        results["dpi"][str(dpi)] = row
    if "pdftoppm" not in available:
        results["skipped"] = "pdftoppm not installed (apt-get install poppler-utils)"
    return results


def results_table(results: dict[str, Any]) -> Table:
    table = Table(title=f"Rasterisation, {results['pages']} pages ({results['source']}), 1 thread")
    for header in ("DPI", "PyMuPDF pages/s", "pdftoppm pages/s", "PyMuPDF / pdftoppm"):
        table.add_column(header, justify="right")
    for dpi, row in results["dpi"].items():
        poppler = row.get("pdftoppm")
        table.add_row(
            dpi,
            f"{row['pymupdf']['pages_per_s']:.1f}",
            "-" if poppler is None else f"{poppler['pages_per_s']:.1f}",
            f"{row['pymupdf_over_pdftoppm']:.1f}x" if poppler else "-",
        )
    return table


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench rasterize", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10 pages instead of 60")
    parser.add_argument("--pages", type=int, help="pages to render per renderer and DPI")
    args = parser.parse_args(argv)
    limit = args.pages or (10 if args.quick else 60)
    console = Console()
    corpus = shared_dir() / "corpus" / "pdfs"
    with tempfile.TemporaryDirectory(prefix="folio-raster-") as tmp:
        pages = corpus_pages(corpus, limit) if corpus.is_dir() else []
        source = f"{corpus}" if pages else "generated born-digital + scanned"
        if not pages:
            pages = generated_pages(Path(tmp), limit)
        with console.status("rendering ..."):
            report = run(pages, source)
    report["machine"] = machine_info(packages=("pymupdf", "pdf2image", "pillow"))
    report["machine"]["pdftoppm"] = shutil.which("pdftoppm")
    console.print(f"[bold]Machine[/]: {describe(report['machine'])}")
    console.print(results_table(report))
    if "skipped" in report:
        console.print(f"[yellow]pdftoppm skipped[/]: {report['skipped']}")
    console.print(f"Results written to {write_results('rasterize', report)}")
    return report


if __name__ == "__main__":
    main()
