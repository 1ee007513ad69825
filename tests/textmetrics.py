"""Character error rate, for asserting OCR quality the way users judge it."""

from __future__ import annotations

from app.evaluate.quality import edit_distance, normalise


def cer(hypothesis: str, reference: str) -> float:
    """Edits per reference character, whitespace runs collapsed (never cut, unlike eval's)."""
    ref, hyp = normalise(reference), normalise(hypothesis)
    return edit_distance(hyp, ref) / max(1, len(ref))
