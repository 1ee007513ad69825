"""How good a page's final text is: against ground truth when there is some (CER, word F1),
else agreement with the PDF's own text layer (word F1)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.errors import RenderError
from app.pdf.render import read_text_layer
from app.pdf.textlayer import text_layer_is_usable
from app.textmatch import word_f1

TRUTH_SUFFIXES = (".md", ".txt")
MAX_CER_CHARS = 6000  # edit distance is quadratic; longer texts are cut (a loop adds nothing)


@dataclass(frozen=True)
class PageQuality:
    cer: float | None = None
    word_f1: float | None = None
    textlayer_f1: float | None = None

    @property
    def reference(self) -> str:
        if self.cer is not None:
            return "truth"
        return "textlayer" if self.textlayer_f1 is not None else "none"


def normalise(text: str) -> str:
    return " ".join(text.split())


def edit_distance(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(hypothesis: str, reference: str) -> float:
    """Edits per reference character, whitespace runs collapsed."""
    ref = normalise(reference)[:MAX_CER_CHARS]
    hyp = normalise(hypothesis)[:MAX_CER_CHARS]
    return edit_distance(hyp, ref) / max(1, len(ref))


def find_truth(truth_dir: Path | None, document: str, page: int, pages: int) -> str | None:
    """`DOC.pN.md|txt` for page N; for a one-page document also `DOC.md|txt` and
    `DOC.*groundtruth.md` (the shared corpus's naming)."""
    if truth_dir is None:
        return None
    names = [f"{document}.p{page}{suffix}" for suffix in TRUTH_SUFFIXES]
    if pages == 1:
        names += [f"{document}{suffix}" for suffix in TRUTH_SUFFIXES]
        names += sorted(p.name for p in truth_dir.glob(f"{document}.*groundtruth.md"))
    for name in names:
        if (truth_dir / name).is_file():
            return (truth_dir / name).read_text(encoding="utf-8")
    return None


def page_quality(text: str, truth: str | None, pdf: Path, page: int, min_chars: int) -> PageQuality:
    if truth is not None:
        return PageQuality(cer=cer(text, truth), word_f1=word_f1(text, truth))
    try:
        layer = read_text_layer(pdf, page)
    except RenderError:
        return PageQuality()
    if text_layer_is_usable(layer, min_chars):
        return PageQuality(textlayer_f1=word_f1(text, layer))
    return PageQuality()
