"""Copies of a line that drift, counted in a token string by the detector's own rule.

The line and structure trackers call a loop on copies that differ in one place, by at most a
word (`segments.near_repeat`: one changed span of at most `WORD_CHARS` characters or a sixth
of the line, on lines of at least `fuzzy_min_chars`; a third of that for CJK). Grounding
counts such a verdict's copies on the page and in the answer with that rule (issue 65), so
three README badges that differ in one word, or table rows that differ in a label, are three
copies on both sides, not one. Both sides are token strings (`grounding`: words, numbers as
`0`, one token a CJK character, joined by single spaces), so the page's line breaks, which a
text layer puts wherever its lines wrap, do not matter: a copy is a stretch of tokens.

Cost: the page's string is searched for the line's first and last token; each place found
costs a few slice comparisons per candidate end, and at most `MAX_ANCHORS` places are tried.
"""

from __future__ import annotations

import re

from app.degeneration.segments import WORD_CHARS, near_repeat

MAX_ANCHORS = 4096  # places tried per side: a page holds a few thousand tokens
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def spaced(tokens: list[str] | tuple[str, ...]) -> str:
    """Tokens as the string copies are looked for in: a space before, between and after."""
    return " " + " ".join(tokens) + " "


def near_copies(haystack: str, line: tuple[str, ...], min_chars: int) -> int:
    """Stretches of `haystack` (a `spaced` string) that are copies of `line` by the
    detector's rule: the same tokens, or the same but for one changed span (`near_repeat`).
    Overlapping stretches count once."""
    unit = " ".join(line)
    if not unit:
        return 0
    if _CJK.search(unit):
        min_chars //= 3  # a CJK character carries about a word
    allowed = max(WORD_CHARS, len(unit) // 6)
    found = _from_heads(haystack, unit, line[0], allowed, min_chars)
    found |= _from_tails(haystack, unit, line[-1], allowed, min_chars)
    return _disjoint(found)


def _from_heads(
    haystack: str, unit: str, head: str, allowed: int, min_chars: int
) -> set[tuple[int, int]]:
    """Copies that start like the line (the change lies further on)."""
    found: set[tuple[int, int]] = set()
    start = haystack.find(f" {head} ")
    anchors = 0
    while start >= 0 and anchors < MAX_ANCHORS:
        anchors += 1
        begin = start + 1
        for end in _ends(haystack, begin + len(unit), allowed):
            if _alike(haystack[begin:end], unit, min_chars):
                found.add((begin, end))
                break
        start = haystack.find(f" {head} ", start + 1)
    return found


def _from_tails(
    haystack: str, unit: str, tail: str, allowed: int, min_chars: int
) -> set[tuple[int, int]]:
    """Copies that end like the line (the change lies before): the heads' search, reversed."""
    reversed_haystack = haystack[::-1]
    found = _from_heads(reversed_haystack, unit[::-1], tail[::-1], allowed, min_chars)
    size = len(haystack)
    return {(size - end, size - begin) for begin, end in found}


def _ends(haystack: str, expected: int, allowed: int) -> list[int]:
    """Token ends within `allowed` characters of `expected`, nearest first."""
    low, high = max(0, expected - allowed), min(len(haystack) - 1, expected + allowed)
    ends = [i for i in range(low, high + 1) if haystack[i] == " "]
    return sorted(ends, key=lambda i: abs(i - expected))


def _alike(stretch: str, unit: str, min_chars: int) -> bool:
    return stretch == unit or near_repeat(stretch, unit, min_chars)


def _disjoint(found: set[tuple[int, int]]) -> int:
    """Most stretches that do not overlap (earliest end first)."""
    count, last_end = 0, -1
    for begin, end in sorted(found, key=lambda span: span[1]):
        if begin >= last_end:
            count, last_end = count + 1, end
    return count
