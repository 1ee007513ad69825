"""The bench's pages: born-digital pages of the shared corpus rendered to images with their
text layer gone (their own layer is the truth: words and boxes), and the corpus' scans that
come with a transcription (text only). Read from ../shared, never copied into the repo: the
images are made in a work folder."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from app.positions.model import Box

# Born-digital English pages (Tesseract reads English here, OCRmyPDF too): prose, two
# columns, tables, code, a form-like cover. A document's pages by number.
STRIPPED: dict[str, tuple[int, ...]] = {
    "docling__2305.03393v1-pg9.pdf": (1,),
    "docling__amt_handbook_sample.pdf": (1,),
    "docling__code_and_formula.pdf": (1, 2),
    "docling__multi_page.pdf": (1, 2, 3),
    "docling__redp5110_sampled.pdf": (1, 4, 7),
    "docling__table_mislabeled_as_picture.pdf": (1,),
    "olmocr__edgar.pdf": (1,),
    "olmocr__earnings.pdf": (1,),
    "olmocr__hf_ff0f0b22c55d8b90dd77d153f48e144fc9db_pg2.pdf": (1,),
    "olmocr__multi_column_miss.pdf": (1,),
    "olmocr__olmo2-pg4.pdf": (1,),
    "olmocr__pdftotext_two_column_issue.pdf": (1, 2),
    "olmocr__openstax_caculus_pg_273.pdf": (1,),
    "pypdf__google-doc-document.pdf": (1,),
}
# Image-only scans with a whole-page transcription (the olmOCR-bench sample's other scans,
# handwriting and a blank page, have unit tests, not a transcription: not measurable here).
TRANSCRIBED = (
    "docling_ocr_groundtruth_tesseract",
    "olmocr_sample_dataset_transcription_of_same_page",
)
DPI = 200  # as Folio renders for OCR by default


@dataclass(frozen=True)
class BenchPage:
    name: str
    pdf: Path  # a one-page image-only PDF, the "original" every arm starts from
    truth: str
    words: list[tuple[str, Box]] = field(default_factory=list)  # true boxes, where known


def _image_only(page: pymupdf.Page, target: Path) -> None:
    """The page as a scan: one JPEG at DPI filling a page of the same size, no text."""
    pixmap = page.get_pixmap(dpi=DPI)
    out = pymupdf.open()
    shown = out.new_page(width=page.rect.width, height=page.rect.height)
    shown.insert_image(shown.rect, stream=pixmap.tobytes("jpeg", jpg_quality=85))
    out.save(target, garbage=3, deflate=True)
    out.close()


def _truth(page: pymupdf.Page) -> tuple[str, list[tuple[str, Box]]]:
    """The page's own words (its layer's order) and boxes, lines joined by newlines."""
    found = page.get_text("words")
    lines: dict[tuple[int, int], list[str]] = {}
    for word in found:
        lines.setdefault((word[5], word[6]), []).append(word[4])
    text = "\n".join(" ".join(words) for words in lines.values())
    return text, [(w[4], (w[0], w[1], w[2], w[3])) for w in found]


def _chosen(limit: int | None) -> list[tuple[str, int]]:
    """(file, page) in the order taken: every document's first page, then second pages ...
    so that a `limit` keeps the documents' variety."""
    rounds = max(len(numbers) for numbers in STRIPPED.values())
    order = [(f, n[r]) for r in range(rounds) for f, n in STRIPPED.items() if r < len(n)]
    return order if limit is None else order[:limit]


def stripped_pages(corpus: Path, work: Path, limit: int | None = None) -> list[BenchPage]:
    pages = []
    for file, number in _chosen(limit):
        source = corpus / file
        if not source.exists():
            continue
        with pymupdf.open(source) as doc:
            if number > doc.page_count:
                continue
            name = f"{Path(file).stem}.p{number}"
            target = work / "originals" / f"{name}.pdf"
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():  # a work folder used again keeps its pages
                _image_only(doc[number - 1], target)
            text, words = _truth(doc[number - 1])
            pages.append(BenchPage(name, target, text, words))
    return pages


def scanned_pages(corpus: Path, work: Path) -> list[BenchPage]:
    """The corpus' one-page scans with a transcription, as they are."""
    pages = []
    for line in (corpus / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("ground_truth_type") not in TRANSCRIBED or entry["pages"] != 1:
            continue
        target = work / "originals" / entry["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_symlink():
            target.symlink_to((corpus / entry["file"]).resolve())  # read where it lies
        truth = (corpus / entry["ground_truth"]).read_text(encoding="utf-8")
        pages.append(BenchPage(Path(entry["file"]).stem, target, truth))
    return pages
