"""How much two transcriptions of the same page agree, independent of layout."""

from __future__ import annotations

import re
from collections import Counter

_WORD = re.compile(r"\w+", re.UNICODE)


def word_f1(candidate: str, reference: str) -> float:
    """F1 of the two texts' word multisets (case-folded): 1.0 same words, 0.0 none shared."""
    a = Counter(w.casefold() for w in _WORD.findall(candidate))
    b = Counter(w.casefold() for w in _WORD.findall(reference))
    if not a or not b:
        return 1.0 if a == b else 0.0
    common = sum((a & b).values())
    if common == 0:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def shingle_f1(candidate: str, reference: str, size: int = 16) -> float:
    """F1 of the two texts' multisets of `size`-character pieces: near 1.0 when one is the
    other with a few characters changed (each change costs about `size` pieces), linear in
    the texts' length. Texts shorter than `size` count as one piece."""
    a = Counter(candidate[i : i + size] for i in range(max(1, len(candidate) - size + 1)))
    b = Counter(reference[i : i + size] for i in range(max(1, len(reference) - size + 1)))
    common = sum((a & b).values())
    if common == 0:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 2 * precision * recall / (precision + recall)
