"""Real healthy OCR outputs for the detector's dev set, read or produced at bench time.

Four origins, all from the shared corpus (`<shared>/corpus`), nothing committed:
- the ground truths beside the PDFs (docling's Markdown: tables, code, lists, formulas);
- olmOCR's committed predictions for its own bench pages (a VLM's real Markdown output);
- Folio's text-layer engine on every page (up to `pages_per_pdf` per PDF) of the PDFs;
- Folio's Tesseract engine on the scanned pages and a few table pages (cached on disk, since
  it takes seconds per page);
plus the healthy rows of `degeneration_dev.jsonl`.
"""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.pdf.render import read_text_layer, render_page

_MIN_CHARS = 200
_TESSERACT_DPI = 150
# Table-heavy pages worth OCR-ing with Tesseract besides the pages without a text layer.
_TESSERACT_EXTRA = ("olmocr__earnings.pdf", "olmocr__discoverworld_crazy_table4.pdf")


@dataclass(frozen=True, slots=True)
class HealthyText:
    id: str
    origin: str  # ground truth | olmocr output | text layer | tesseract | dev corpus
    text: str


def healthy_texts(
    shared: Path, cache: Path, pages_per_pdf: int = 3, tesseract: bool = True
) -> list[HealthyText]:
    """Every healthy text of the dev set, in a stable order."""
    corpus = shared / "corpus"
    manifest = _manifest(corpus / "pdfs" / "manifest.jsonl")
    texts = [
        *_ground_truths(corpus / "pdfs", manifest),
        *_olmocr_outputs(corpus / "olmocr_bench_sample" / "olmocr_pipeline"),
        *_text_layers(corpus / "pdfs", manifest, pages_per_pdf),
        *_dev_corpus(corpus / "degeneration_dev.jsonl"),
    ]
    if tesseract:
        texts.extend(_tesseract_outputs(corpus / "pdfs", manifest, cache))
    return [text for text in texts if len(text.text.strip()) >= _MIN_CHARS]


def _manifest(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _ground_truths(pdfs: Path, manifest: list[dict]) -> Iterator[HealthyText]:
    for row in manifest:
        truth = row.get("ground_truth") or ""
        if truth.endswith(".md"):
            text = (pdfs / truth).read_text(encoding="utf-8")
            yield HealthyText(f"gt:{row['file']}", "ground truth", text)


def _olmocr_outputs(folder: Path) -> Iterator[HealthyText]:
    for path in sorted(folder.rglob("*.md")):
        yield HealthyText(f"olmocr:{path.name}", "olmocr output", path.read_text(encoding="utf-8"))


def _text_layers(pdfs: Path, manifest: list[dict], pages: int) -> Iterator[HealthyText]:
    for row in manifest:
        if not row.get("has_text_layer"):
            continue
        for number in range(1, min(pages, row["pages"]) + 1):
            text = read_text_layer(pdfs / row["file"], number)
            yield HealthyText(f"textlayer:{row['file']}#{number}", "text layer", text)


def _dev_corpus(path: Path) -> Iterator[HealthyText]:
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line else None
        if row and row["label"] == "healthy":
            yield HealthyText(f"dev:{row['id']}", "dev corpus", row["text"])


def loop_prefixes(shared: Path) -> list[HealthyText]:
    """The real text that degenerate dev outputs hold besides their loop (paragraphs that occur
    once; the only Chinese prose in the corpus): material for loop shapes, not healthy samples."""
    texts = []
    path = shared / "corpus" / "degeneration_dev.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line else None
        if row and row["label"] == "degenerate":
            paragraphs = row["text"].split("\n\n")
            unique = [p for p in paragraphs if len(p) >= 30 and paragraphs.count(p) == 1]
            text = "\n\n".join(unique)
            if len(text) >= _MIN_CHARS:
                texts.append(HealthyText(f"dev-prefix:{row['id']}", "dev corpus prefix", text))
    return texts


def _tesseract_outputs(pdfs: Path, manifest: list[dict], cache: Path) -> Iterator[HealthyText]:
    files = [r["file"] for r in manifest if not r.get("has_text_layer")] + list(_TESSERACT_EXTRA)
    engine = None
    for name in files:
        cached = cache / f"{name}.p1.tesseract.txt"
        if not cached.is_file():
            engine = engine or _tesseract_engine()
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(_ocr_first_page(engine, pdfs / name), encoding="utf-8")
        yield HealthyText(f"tesseract:{name}#1", "tesseract", cached.read_text(encoding="utf-8"))
    if engine is not None:
        engine.close()


def _tesseract_engine():  # type: ignore[no-untyped-def]
    from app.engines.tesseract import TesseractEngine  # loads libtesseract: only when needed

    return TesseractEngine()


def _ocr_first_page(engine, path: Path) -> str:  # type: ignore[no-untyped-def]
    from app.domain import PageInput
    from app.settings import PlanStep

    page = render_page(path, 1, dpi=_TESSERACT_DPI, max_side=4000)
    step = PlanStep(name="bench", engine="tesseract")
    result = engine.transcribe(PageInput(page.image, "", False), step)
    return str(result.text)
