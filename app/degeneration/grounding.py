"""A loop verdict checked against the page's own text (issues 50 and 65).

A verdict claims that the output repeats a unit more often than the page does. `PageText`
counts how often the verdict's unit occurs in the page's text (its text layer, or what a read
at the verdict found on a scan), both read the same way (`grounding_tokens`: NFKC, lower case,
markup and punctuation dropped, every number one `0`, each CJK character one token), and both
counted by the measure that made the verdict (`ground`): copies that differ by a word by the
detector's near-copy rule (`near_copies`), other copies as the shape view reads them. A unit
the page holds at least as often as the output does is not a loop yet: the stream goes on
(`grounded.GroundedDetector`) and that unit's bar rises to the page's count plus `margin`
copies; past it, the verdict stands. Grounding never clears a loop: one the page overruled is
cut at most `margin` copies past the page's count, plus the detector's own latency (it counts
the unit afresh from the overrule: `min_repeats` copies and a few characters). A unit that
cannot be read on the page (rules, fill, numbers only) keeps its verdict: the page is asked
only about words it could hold.

Pure, like the detector: it also runs inside vLLM's engine (the plugin's loop stop).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from app.degeneration.config import DetectorConfig, LoopVerdict
from app.degeneration.near_copies import near_copies, spaced

# Copies past the page's own count a unit may run to once the page overruled a verdict on it.
# Why 2: a page's text layer and a model's reading of it disagree by a copy or two where a
# row or a running line is drawn twice (a table header repeated over a column break, a
# caption beside its figure); the bench (docs/detector-evaluation.md, grounding) measures
# the healthy pages this keeps and the characters it lets a real loop run on.
DEFAULT_MARGIN = 2
# A unit must hold this many letters to be asked about: shorter ones (`a`, `0 0`) are on
# every page and say nothing of a loop.
MIN_LETTERS = 2
# Copies longer than this are asked about by the verdict's excerpt only.
MAX_PERIOD = 2048
# The detector's `fuzzy_min_chars`: lines shorter than this are near copies only when equal.
FUZZY_MIN_CHARS = DetectorConfig().fuzzy_min_chars

_SEP = "\x1f"  # tokens are joined by two of these, so consecutive copies both count
_TAG = re.compile(r"<[^<>]{0,200}>")
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_HYPHEN_BREAK = re.compile(r"(\w)-\s*\n\s*(\w)")
_CJK = re.compile(
    "([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f])"
)
_NOT_WORD = re.compile(r"[\W_]+")
_BOUNDARY_AFTER = frozenset(" \t\r\n>|")
_BOUNDARY_AT = frozenset("<|")


def grounding_tokens(text: str) -> list[str]:
    """`text` as the tokens grounding compares: words, numbers as `0` (as the detector's shape
    view reads them), CJK characters."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _HYPHEN_BREAK.sub(r"\1\2", text)
    text = _TAG.sub(" ", text)
    text = _NUMBER.sub(" 0 ", text)
    text = _CJK.sub(r" \1 ", text)
    return _NOT_WORD.sub(" ", text).split()


def _joined(tokens: list[str] | tuple[str, ...]) -> str:
    return _SEP + (_SEP * 2).join(tokens) + _SEP


def _groundable(tokens: tuple[str, ...]) -> bool:
    """Words enough to ask a page about: `MIN_LETTERS` letters, or a letter beside a number (a
    table's `13 B` cells, asked as the pair, never as the letter)."""
    letters = sum(len(t) for t in tokens if not t.isdigit())
    return letters >= MIN_LETTERS or (letters > 0 and len(tokens) >= 2)


def unit_readings(unit: str, whole: bool = True) -> list[tuple[str, ...]]:
    """The unit's token sequences to look for: a periodic unit (`whole`) may start anywhere in
    its copy, mid-word included, so each rotation that starts on a word or a cell is read; a
    unit cut short (longer than the verdict's excerpt) only as it is."""
    if not whole:
        readings = [tuple(grounding_tokens(unit))]
    else:
        starts = [
            i
            for i in range(len(unit))
            if unit[i] in _BOUNDARY_AT or (i and unit[i - 1] in _BOUNDARY_AFTER)
        ] or range(len(unit))
        readings = [tuple(grounding_tokens(unit[i:] + unit[:i])) for i in starts]
    found = dict.fromkeys(r for r in readings if r and _groundable(r))
    return list(found)


def canonical(tokens: tuple[str, ...]) -> str:
    """One key for every rotation of a unit's tokens (the least rotation)."""
    rotations = (tokens[i:] + tokens[:i] for i in range(len(tokens)))
    return _SEP.join(min(rotations))


class PageText:
    """The page's own text, read once (at its first question) and asked how often a unit
    occurs in it."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._joined: str | None = None
        self._spaced: str | None = None

    @property
    def joined(self) -> str:
        if self._joined is None:
            self._joined = _joined(grounding_tokens(self._text))
        return self._joined

    @property
    def spaced(self) -> str:
        """The page's tokens as `near_copies` reads them."""
        if self._spaced is None:
            self._spaced = spaced(grounding_tokens(self._text))
        return self._spaced

    def copies(self, tokens: tuple[str, ...]) -> int:
        return self.joined.count(_joined(tokens))

    def bag_copies(self, bag: dict[tuple[str, ...], int]) -> int:
        return bag_copies(self.joined, bag)


@dataclass(frozen=True, slots=True)
class Grounding:
    """What the page held of a verdict's unit: `page_copies` against the output's copies."""

    unit: str
    page_copies: int
    output_copies: int
    overruled: bool  # the page held it as often: the stream went on
    at: int  # raw characters of output when it was asked
    measure: str = "shape"  # how both sides were counted: shape or near (`ground`)


def ground(
    verdict: LoopVerdict, output: str, page: PageText, min_chars: int = FUZZY_MIN_CHARS
) -> Grounding | None:
    """The page's count of the verdict's unit, and the output's, both by the measure that made
    the verdict (issue 65): copies that differ by a word by the detector's near-copy rule, line
    by line (`near`, `near_ground`; `min_chars` its `fuzzy_min_chars`); other copies, exact or
    differing in their numbers, with every number one `0` on both sides (`shape`: counting an
    exact repeat's numbers too was measured, and only added false alarms where a page's text
    writes its numbers otherwise, an OCR misread digit, `2/1` spaced as `2 / 1`). None where
    the unit holds no words the page could hold (rules, fill, numbers, markup). The unit is
    read as a sequence of words, and a unit of several lines also line by line (`line_bag`),
    whichever the page holds more often."""
    if verdict.near and 1 < verdict.period <= MAX_PERIOD:
        found = near_ground(verdict, output, page, min_chars)
        if found is not None:
            return found
    readings = unit_readings(verdict.unit, whole=verdict.period <= len(verdict.unit))
    bag = None
    if 1 < verdict.period <= MAX_PERIOD:  # the copies as written (some views keep a digest)
        first = output[verdict.onset : verdict.onset + verdict.period]
        readings += unit_readings(first) + unit_readings(output[-verdict.period :])
        bag = line_bag(output, verdict.onset, verdict.period)
    if not readings and not bag:
        return None
    written = _joined(grounding_tokens(output))
    page_copies, key, output_copies = -1, "", 0
    if readings:
        page_copies, tokens = max((page.copies(r), r) for r in readings)
        key, output_copies = canonical(tokens), written.count(_joined(tokens))
    if bag and (held := page.bag_copies(bag)) > page_copies:
        page_copies, key = held, "\n".join(sorted(_SEP.join(line) for line in bag))
        output_copies = bag_copies(written, bag)
    return Grounding(key, page_copies, output_copies, False, len(output))


def near_ground(
    verdict: LoopVerdict, output: str, page: PageText, min_chars: int
) -> Grounding | None:
    """A verdict on copies that differ by a word, counted by the detector's rule on both
    sides: each whole line of the first copy, as often as the page (and the output) holds
    stretches that are copies of it (`near_copies`); the scarcest line over its share."""
    lines = copy_lines(output, verdict.onset, verdict.period)
    bag = Counter(line for line in lines if _groundable(line))
    if not bag:
        return None
    # The detector judged the lines as written, numbers and marks in: a line that was long
    # enough there to differ by a word is so here, where `0` stands for `$11.64`.
    raw = written_lines(output, verdict)
    wide = {tuple(grounding_tokens(line)) for line in raw if len(line) >= min_chars}
    gate = {line: 0 if line in wide else min_chars for line in bag}
    written = spaced(grounding_tokens(output))
    held = min(near_copies(page.spaced, line, gate[line]) // n for line, n in bag.items())
    wrote = min(near_copies(written, line, gate[line]) // n for line, n in bag.items())
    key = "near:" + "\n".join(sorted(_SEP.join(line) for line in bag))
    return Grounding(key, held, wrote, False, len(output), "near")


def copy_lines(output: str, onset: int, period: int) -> list[tuple[str, ...]]:
    """The tokens of each whole line of the copy at `onset` (blank lines left out)."""
    lines = [tuple(grounding_tokens(line)) for line in _whole_lines(output, onset, period)]
    return [line for line in lines if line]


def written_lines(output: str, verdict: LoopVerdict) -> list[str]:
    """The whole lines of the verdict's copy as the output writes them (stripped)."""
    lines = _whole_lines(output, verdict.onset, verdict.period)
    return [line.strip() for line in lines if line.strip()]


def _whole_lines(output: str, onset: int, period: int) -> list[str]:
    start = output.find("\n", onset - 1) + 1 if onset and output[onset - 1] != "\n" else onset
    end = output.rfind("\n", start, onset + period + 1)
    return output[start:end].split("\n") if end > start else []


def line_bag(output: str, onset: int, period: int) -> dict[tuple[str, ...], int] | None:
    """The whole lines of the copy at `onset`, each with how often it comes in the copy: a
    page's text layer may give a table's lines in another order than a model writes them (a
    column's cells one after another, a header after its rows), so a copy of two or more lines
    is also asked of the page line by line. None for a copy of fewer than two whole lines."""
    lines = copy_lines(output, onset, period)
    bag = Counter(line for line in lines if _groundable(line))
    return dict(bag) if len(lines) >= 2 and bag else None


def bag_copies(joined: str, bag: dict[tuple[str, ...], int]) -> int:
    """Copies of a line bag a token string holds: its scarcest line's count over its share."""
    return min(joined.count(_joined(line)) // times for line, times in bag.items())
