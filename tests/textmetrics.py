"""Character error rate, for asserting OCR quality the way users judge it."""

from __future__ import annotations


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
    ref, hyp = normalise(reference), normalise(hypothesis)
    return edit_distance(hyp, ref) / max(1, len(ref))
