"""What a searchable PDF is worth, measured on the file as a reader opens it (PyMuPDF): the
text it copies out against the truth (word F1, CER) and against what the writer meant to lay
down; its words' boxes against the true boxes (share with IoU >= 0.5, words paired in reading
order); its size against the original's; whether it renders exactly as the original."""

from __future__ import annotations

from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import pymupdf

from app.evaluate.quality import cer
from app.positions.model import Box
from app.searchable.words import layer_text
from app.textmatch import word_f1

IOU_HIT = 0.5


def iou(a: Box, b: Box) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(width, 0.0) * max(height, 0.0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def box_hits(placed: list[tuple[str, Box]], truth: list[tuple[str, Box]]) -> int:
    """True words whose placed word (paired in order: equal words, and one to one inside a run
    of misread words of the same length) lies within IoU 0.5 of the true box."""
    matcher = SequenceMatcher(None, [w for w, _ in placed], [w for w, _ in truth], autojunk=False)
    hits = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            pairs = zip(placed[i1:i2], truth[j1:j2], strict=True)
            hits += sum(iou(p[1], t[1]) >= IOU_HIT for p, t in pairs)
    return hits


def _same_pixels(a: pymupdf.Page, b: pymupdf.Page) -> bool:
    return bool(a.get_pixmap(dpi=72).samples == b.get_pixmap(dpi=72).samples)


def page_measures(
    pdf: Path, original: Path, truth: str, truth_words: list[tuple[str, Box]], kept: str | None
) -> dict[str, Any]:
    with pymupdf.open(pdf) as written, pymupdf.open(original) as before:
        page = written[0]
        copied = page.get_text()
        placed = [(w[4], (w[0], w[1], w[2], w[3])) for w in page.get_text("words")]
        measures: dict[str, Any] = {
            "word_f1": round(word_f1(copied, truth), 4),
            "cer": round(cer(copied, truth), 4),
            "bytes": pdf.stat().st_size,
            "original_bytes": original.stat().st_size,
            "text_bytes": len(" ".join(truth.split()).encode()),
            "same_pixels": _same_pixels(page, before[0]),
        }
    if kept is not None:
        measures["f1_vs_kept"] = round(word_f1(copied, layer_text(kept)), 4)
    if truth_words:
        measures["true_words"] = len(truth_words)
        measures["box_hits"] = box_hits(placed, truth_words)
    return measures
