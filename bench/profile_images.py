"""What a profile's image costs: the page image each built-in profile sends, against the
old one-size image (a 200-DPI render shrunk to 1288 px), side by side in one run.

Run `python -m bench profile-images [--quick]`. Per profile, on the same pages: the seconds
to make and PNG-encode the image (the old way; the new way, which renders the page again at
the profile's DPI after the pipeline's 200-DPI render), its size, and its vision tokens for a
28-px-patch model (width x height / 784: Qwen2-VL's count before its token merge, a proxy of
what the server spends on the prompt). PDFs from `$FOLIO_SHARED_DIR/corpus/pdfs` when
present, else generated. One thread.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image
from rich.console import Console
from rich.table import Table

from app.domain import PageInput
from app.engines.vlm_image import fit_image, model_image
from app.pdf.render import rasterize, render_page
from app.profiles import BUILTIN
from bench.environment import describe, machine_info, shared_dir, write_results
from bench.rasterize import corpus_pages, generated_pages

OLD_DPI, OLD_CAP, OLD_SIDE = 200, 2400, 1288  # settings.dpi, settings.max_image_side, endpoint
PROFILES = ("olmocr2", "nanonets-ocr2", "dots-ocr-layout", "deepseek-ocr", "chandra", "lightonocr2")


def _png_bytes(image: Image.Image) -> int:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.tell()


def _page(path: Path, number: int) -> PageInput:
    rendered = render_page(path, number, OLD_DPI, OLD_CAP)  # what the pipeline renders first
    return PageInput(
        rendered.image,
        "",
        False,
        points=rendered.points,
        render_at=lambda dpi: rasterize(path, number, dpi),
    )


def measure(pages: list[tuple[Path, int]], profile_id: str | None) -> dict[str, Any]:
    """Seconds (render included), pixels, vision tokens and PNG bytes per page, mean."""
    seconds = pixels = tokens = png = 0.0
    for path, number in pages:
        began = time.perf_counter()
        page = _page(path, number)
        if profile_id is None:
            image = fit_image(page.image, OLD_SIDE)
        else:
            image = model_image(page, BUILTIN[profile_id].image)
        png += _png_bytes(image)
        seconds += time.perf_counter() - began
        pixels += image.width * image.height
        tokens += image.width * image.height / 784
    n = len(pages)
    return {
        "seconds_per_page": round(seconds / n, 4),
        "megapixels": round(pixels / n / 1e6, 2),
        "vision_tokens": round(tokens / n),
        "png_kb": round(png / n / 1024),
    }


def run(pages: list[tuple[Path, int]], source: str) -> dict[str, Any]:
    measure(pages, None)  # warm-up: documents opened and cached before any arm is timed
    old = measure(pages, None)
    arms: dict[str, Any] = {"old (200 DPI shrunk to 1288 px)": old}
    for profile_id in PROFILES:
        row = measure(pages, profile_id)
        row["seconds_over_old"] = round(row["seconds_per_page"] / old["seconds_per_page"], 2)
        row["tokens_over_old"] = round(row["vision_tokens"] / old["vision_tokens"], 2)
        arms[profile_id] = row
    return {"source": source, "pages": len(pages), "arms": arms}


def results_table(results: dict[str, Any]) -> Table:
    table = Table(title=f"Profile images, {results['pages']} pages ({results['source']}), 1 thread")
    for header in ("image", "s/page", "x old", "MP", "vision tokens", "x old", "PNG KiB"):
        table.add_column(header, justify="right")
    for name, row in results["arms"].items():
        table.add_row(
            name,
            f"{row['seconds_per_page']:.3f}",
            f"{row.get('seconds_over_old', 1.0):.2f}",
            f"{row['megapixels']:.2f}",
            f"{row['vision_tokens']:,}",
            f"{row.get('tokens_over_old', 1.0):.2f}",
            f"{row['png_kb']:,}",
        )
    return table


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench profile-images", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="6 pages instead of 30")
    args = parser.parse_args(argv)
    limit = 6 if args.quick else 30
    console = Console()
    corpus = shared_dir() / "corpus" / "pdfs"
    with tempfile.TemporaryDirectory(prefix="folio-profile-images-") as tmp:
        pages = corpus_pages(corpus, limit) if corpus.is_dir() else []
        source = str(corpus) if pages else "generated born-digital + scanned"
        if not pages:
            pages = generated_pages(Path(tmp), limit)
        report = run(pages, source)
    report["machine"] = machine_info(packages=("pymupdf", "pillow"))
    console.print(f"[bold]Machine[/]: {describe(report['machine'])}")
    console.print(results_table(report))
    console.print(f"Results written to {write_results('profile-images', report)}")
    return report


if __name__ == "__main__":
    main()
