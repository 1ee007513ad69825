"""CREP: coverage of the output by its most repeated segment, plus n-gram diversity.

CREP follows Algorithm 1 (Appendix F) of "Mitigating text degeneration via token-level
guidance for pruned LLMs": for each r in 4..16, take the most frequent r-gram, use the modal
gap between its consecutive occurrences as the length of the repeated segment, read that
segment from the r-gram's first occurrence, and measure which share of the output from that
occurrence on is covered by copies of it (scanning left to right, non-overlapping, the first
copy included; a segment found only once covers nothing). The best share over r is the CREP
coverage; an output is degenerate when it reaches 0.3.

Tokens are not a model's tokens but the tokenizer-agnostic units of `tokens.tokenize`: words,
single punctuation marks, and single characters for scripts written without spaces (CJK, Thai,
...), all case-folded, with layout fill (leader dots, rules, table bars) left out.
"""

from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from app.degeneration.tokens import Token, tokenize

CREP_THRESHOLD = 0.3
_R_RANGE = range(4, 17)


@dataclass(frozen=True, slots=True)
class CrepResult:
    coverage: float  # best share of the output (from the segment's first copy) it covers
    r: int  # r-gram length that gave the best coverage (0 when none repeats)
    segment_tokens: int  # length of the repeated segment, in tokens
    onset: int  # raw offset of the first copy of the segment
    segment_chars: int  # raw length of one copy
    segment: str  # the repeated segment, as raw text (truncated)

    @property
    def degenerate(self) -> bool:
        return self.coverage >= CREP_THRESHOLD


_NO_REPETITION = CrepResult(
    coverage=0.0, r=0, segment_tokens=0, onset=0, segment_chars=0, segment=""
)


def crep_coverage(text: str) -> CrepResult:
    """CREP coverage of `text` (see module docstring for the tokenisation)."""
    tokens = tokenize(text)
    ids = _token_ids(tokens)
    best = _NO_REPETITION
    for r in _R_RANGE:
        if len(ids) < r + 1:
            break
        candidate = _coverage_for_r(ids, r)
        if candidate is not None and candidate[0] > best.coverage:
            coverage, first, length = candidate
            start, end = tokens[first].start, tokens[first + length - 1].end
            best = CrepResult(
                coverage=round(coverage, 4),
                r=r,
                segment_tokens=length,
                onset=start,
                segment_chars=end - start,
                segment=text[start:end][:200],
            )
    return best


def unique_ngram_rates(text: str, sizes: range = range(3, 7)) -> dict[int, float]:
    """Distinct n-grams / all n-grams for each n (1.0 when the text is too short)."""
    ids = _token_ids(tokenize(text))
    rates: dict[int, float] = {}
    for n in sizes:
        grams = list(zip(*(ids[k:] for k in range(n)), strict=False))
        rates[n] = round(len(set(grams)) / len(grams), 4) if grams else 1.0
    return rates


def _token_ids(tokens: list[Token]) -> list[int]:
    vocabulary: dict[str, int] = {}
    return [vocabulary.setdefault(token.text, len(vocabulary)) for token in tokens]


def _coverage_for_r(ids: list[int], r: int) -> tuple[float, int, int] | None:
    """(coverage, first occurrence, segment length) for the most frequent r-gram."""
    grams = list(zip(*(ids[k:] for k in range(r)), strict=False))
    top, count = Counter(grams).most_common(1)[0]
    if count < 2:
        return None
    positions = [index for index, gram in enumerate(grams) if gram == top]
    gaps = Counter(b - a for a, b in pairwise(positions))
    # Modal gap; ties go to the shorter segment (the finer loop).
    length = min(gaps.items(), key=lambda item: (-item[1], item[0]))[0]
    first = positions[0]
    covered = _covered_by_copies(ids, first, ids[first : first + length])
    if covered < 2 * length:
        return None  # the segment never comes back whole: nothing is repeated
    return covered / (len(ids) - first), first, length


def _covered_by_copies(ids: list[int], start: int, segment: list[int]) -> int:
    """Tokens from `start` on covered by non-overlapping exact copies of `segment`."""
    length = len(segment)
    head = segment[0]
    covered = 0
    index = start
    last_start = len(ids) - length
    while index <= last_start:
        if ids[index] == head and ids[index : index + length] == segment:
            covered += length
            index += length
        else:
            index += 1
    return covered
