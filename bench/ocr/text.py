"""Real OCR outputs to replay on the scripted test server: healthy pages and degenerate tails.

From `$FOLIO_SHARED_DIR/corpus` (default `<repo>/../shared`) when present: olmOCR's own page
transcriptions (`olmocr_bench_sample/olmocr_pipeline/*.md`) and the healthy and degenerate
outputs of `degeneration_dev.jsonl`. Without it, pages Folio generates itself
(`app.pdf.samples.page_text` and `bench.detector.mixed_text`), so the benchmark still runs on a
clean clone.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from app.pdf.samples import page_text
from bench.detector import mixed_text

REPO = Path(__file__).resolve().parents[2]
MIN_HEALTHY_CHARS = 100  # blank and near-blank pages say nothing about loops


@dataclass(frozen=True)
class OcrText:
    source: str  # where the text comes from, e.g. "olmocr:earnings_pg1" or "generated:7"
    text: str


def shared_dir() -> Path:
    configured = os.environ.get("FOLIO_SHARED_DIR")
    return Path(configured) if configured else REPO.parent / "shared"


def healthy_pages() -> list[OcrText]:
    """Healthy OCR outputs, real ones when the shared corpus is here."""
    corpus = shared_dir() / "corpus"
    pages = [
        OcrText(f"olmocr:{path.stem.removesuffix('_repeat1')}", path.read_text())
        for path in sorted((corpus / "olmocr_bench_sample" / "olmocr_pipeline").glob("*.md"))
    ]
    pages += [OcrText(f"dev:{r['id']}", r["text"]) for r in _dev_rows(corpus, "healthy")]
    pages = [page for page in pages if len(page.text.strip()) >= MIN_HEALTHY_CHARS]
    return pages or generated_pages()


def degenerate_tails() -> list[OcrText]:
    """Real degenerate outputs (loop tails) from the dev corpus; empty without it."""
    corpus = shared_dir() / "corpus"
    return [OcrText(f"dev:{r['id']}", r["text"]) for r in _dev_rows(corpus, "degenerate")]


def generated_pages(count: int = 24, seed: int = 20) -> list[OcrText]:
    """Pages Folio generates itself: sample-PDF prose, tables, tables of contents; every
    fourth page CJK. A page keeps one script: benches cut a page to a token count from its
    average tokens per character, which a CJK block in a Latin page would throw out by ten
    times (a Han character is about 3 tokens, a Latin one a quarter)."""
    rng = random.Random(seed)
    latin = (mixed_text.prose, mixed_text.table, mixed_text.contents)
    pages = []
    for index in range(count):
        parts = (mixed_text.cjk,) if index % 4 == 3 else latin
        body = "".join(rng.choice(parts)(rng) for _ in range(rng.randint(2, 5)))
        pages.append(OcrText(f"generated:{index}", page_text(index) + "\n\n" + body))
    return pages


def _dev_rows(corpus: Path, label: str) -> list[dict]:
    path = corpus / "degeneration_dev.jsonl"
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if row.get("label") == label and row.get("text")]
