"""The scale benchmark's PDFs: the shared corpus's real PDFs (`<shared>/corpus/pdfs`: born-digital
and scanned, several languages and layouts), copied until there are enough pages, each copy's
pages stamped with a small mark so that no two page images are the same (the stand-in answers by
image; identical copies would all loop or all not). Without the corpus, Folio's sample pages."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from app.pdf.samples import born_digital_pdf, page_text
from bench.ocr.text import shared_dir


def source_pdfs() -> list[Path]:
    return sorted((shared_dir() / "corpus" / "pdfs").glob("*.pdf"))


def write_scale_pdfs(folder: Path, pages: int) -> int:
    """Documents holding `pages` pages in all, in `folder`; pages written."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = source_pdfs()
    if not sources:
        sample = folder.parent / "sample-source.pdf"
        sample.write_bytes(born_digital_pdf([page_text(seed) for seed in range(20)]))
        sources = [sample]
    written, copy = 0, 0
    while written < pages:
        for source in sources:
            if written >= pages:
                break
            written += _stamped_copy(
                source, folder / f"c{copy:03d}-{source.name}", copy, pages - written
            )
        copy += 1
    return written


def _stamped_copy(source: Path, target: Path, copy: int, most: int) -> int:
    with pymupdf.open(source) as original, pymupdf.open() as out:
        out.insert_pdf(original, to_page=min(original.page_count, most) - 1)
        for number, page in enumerate(out):
            page.insert_text((4, 8), f"copy {copy} page {number + 1}", fontsize=4)
        out.save(target, garbage=1, deflate=True)
        return out.page_count
