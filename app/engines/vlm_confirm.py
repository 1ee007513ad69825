"""A confirming attempt's relaxed stop and its judge: the confirmed unit, and only it, tolerated
up to a bound.

A retry cut by the same verdict at the same place on the same text earns one confirming attempt
(`app.retry.plan`). It settles whether the page holds that repetition (a passport's `<` fill, a
table's repeated row) or the model loops on it. The attempt streams under the detector as usual,
except that a verdict on the confirmed unit is let through while the answer's runs of it hold
at most `bound` copies: a healthy page's repetition ends there and the stream goes on, watched
by a fresh detector; a sticky loop passes the bound and is cut, a bounded number of tokens past
where it was cut before. An answer that ends is then the page's only if the offline scorer,
on the answer less the runs let through, finds nothing either: a loop that ends is still
degeneration.

The same loop: the same unit up to white space, numbers and phase, or, where the verdict says
its copies drift (a changed word, a counter), the same kind of loop with a period within
`DRIFT_PERIOD_SHARE` of the cut's. The bound: what the page's own text holds plus a margin,
where that is known (grounding); otherwise `CUT_MULTIPLE` times the copies the run held when it
was first cut (why that multiple: docs/loop-stop.md, "The confirming attempt's bound").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from app.degeneration import DetectorConfig, LoopDetector, ScoreConfig, score_output
from app.domain import ConfirmedUnit, Verdict
from app.engines.vlm_stream import LoopDetecting

# Copies of the confirmed unit a confirming attempt may write in one run, as a multiple of the
# copies that run held when a verdict first cut it (where the page's own count is unknown).
CUT_MULTIPLE = 6
# Where the page's count is known: that count plus this share of it, and at least this many
# copies (a text layer may merge or miss a copy).
PAGE_MARGIN_SHARE = 0.25
PAGE_MARGIN_MIN = 2
# A drifting copy is the confirmed loop's when its period is within this share of the cut's.
DRIFT_PERIOD_SHARE = 0.25
# The judge feeds the answer as a stream of this many characters a piece.
_JUDGE_CHUNK = 16

_SPACE = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")
_ZEROS = re.compile(r"0+")  # numbers split by white space read as one


def _root(unit: str) -> str:
    """The unit as the detector's shape view reads it (white space dropped, every number one
    `0`), reduced to its shortest repeating piece (`<<` and `<` are one unit). A copy cut
    inside a number (`0.00 | ... | 12` of `| 120.00 |`) holds it at both ends: one number."""
    shape = _ZEROS.sub("0", _DIGITS.sub("0", _SPACE.sub("", unit)))
    if len(shape) > 1 and shape[0] == shape[-1] == "0":
        shape = shape[:-1]
    for size in range(1, len(shape) // 2 + 1):
        if len(shape) % size == 0 and shape[:size] * (len(shape) // size) == shape:
            return shape[:size]
    return shape


def same_unit(a: str, b: str) -> bool:
    """Whether two raw copies are one unit (up to white space, numbers and phase; a copy
    that ends a character early or late, as a line break can make it, is the same)."""
    short, long = sorted((_root(a), _root(b)), key=len)
    return bool(short) and len(long) - len(short) <= 1 and short in long + long


@dataclass(frozen=True)
class Tolerance:
    """A confirmed unit and the bound on its copies in one run."""

    kind: str  # the cut's verdict kind, which a run past the bound is recorded under
    unit: str  # one raw copy
    at_cut: int  # copies from the loop's onset to the cut
    page_holds: int | None = None
    multiple: int = CUT_MULTIPLE

    @classmethod
    def of(cls, confirmed: ConfirmedUnit, multiple: int = CUT_MULTIPLE) -> Tolerance | None:
        """None where the unit has nothing to match (white space only)."""
        if not _root(confirmed.unit):
            return None
        extent = len(confirmed.cut_text) - confirmed.onset
        at_cut = max(1, extent // len(confirmed.unit))  # whole copies
        return cls(confirmed.kind, confirmed.unit, at_cut, confirmed.page_holds, multiple)

    @property
    def bound(self) -> int:
        """The most copies of the unit the answer may hold in the runs the detector calls."""
        if self.page_holds is not None:
            margin = max(PAGE_MARGIN_MIN, round(PAGE_MARGIN_SHARE * self.page_holds))
            return self.page_holds + margin
        return self.multiple * self.at_cut

    def matches(self, copy: str, kind: str, drift: bool) -> bool:
        """Whether a verdict on `copy` is on the confirmed loop."""
        if same_unit(copy, self.unit):
            return True
        near = abs(len(copy) - len(self.unit)) <= DRIFT_PERIOD_SHARE * len(self.unit)
        return drift and kind == self.kind and near


@dataclass
class Span:
    """A run of the confirmed unit let through: raw offsets, and its unit's period."""

    start: int
    end: int
    period: int

    @property
    def copies(self) -> int:
        return round((self.end - self.start) / max(self.period, 1))


class TolerantDetector:
    """The stream's detector on a confirming attempt: a verdict on the confirmed loop is let
    through while its run holds at most the bound, and the text after it is watched by a
    fresh detector; any other verdict, or a run past the bound, stops the stream."""

    def __init__(self, make: Callable[[], LoopDetecting], tolerance: Tolerance) -> None:
        self._make = make
        self._tolerance = tolerance
        self._inner = make()
        self._chunks: list[str] = []
        self._length = 0
        self._base = 0  # where the inner detector's text starts
        self.spans: list[Span] = []  # the runs let through

    def feed(self, chunk: str) -> Any:
        self._chunks.append(chunk)
        self._length += len(chunk)
        verdict = self._inner.feed(chunk)
        while verdict is not None:
            stop, rest = self._judged(verdict)
            if stop is not None:
                return stop
            verdict = self._inner.feed(rest) if rest else None
        return None

    def finish(self) -> Any:
        finish = getattr(self._inner, "finish", None)
        verdict = finish() if finish else None
        return None if verdict is None else self._judged(verdict)[0]

    def _judged(self, verdict: Any) -> tuple[Any, str]:
        """The verdict to stop at (None: let through), and the text a fresh detector has not
        read yet (the rest of the chunk after the verdict)."""
        text = "".join(self._chunks)
        self._chunks = [text]
        onset, period = self._base + int(verdict.onset), max(int(verdict.period), 1)
        copy = text[onset : onset + period]
        drift = bool(getattr(verdict, "drift", False))
        if not self._tolerance.matches(copy, str(verdict.kind), drift):
            return replace(verdict, onset=onset), ""
        covered = getattr(verdict, "covered", None)
        point = self._length if covered is None else onset + int(covered)
        point = min(max(point, self._base), self._length)
        span = self._extend(onset, point, period)
        # The bound is on the answer's copies of the unit, not one run's: a loop the detector
        # takes a while to call again (copies that drift) would otherwise restart it.
        copies = sum(s.copies for s in self.spans)
        if copies > self._tolerance.bound:  # the loop started where its run did
            return replace(verdict, onset=span.start, repeats=float(copies)), ""
        self._inner, self._base = self._make(), point
        return None, text[point:]

    def _extend(self, onset: int, point: int, period: int) -> Span:
        """The run this verdict belongs to: the last one where it goes on from it."""
        last = self.spans[-1] if self.spans else None
        if last is not None and onset <= last.end + 2 * period:
            last.end = max(last.end, point)
            return last
        self.spans.append(Span(onset, point, period))
        return self.spans[-1]


@dataclass(frozen=True)
class ConfirmJudgement:
    """The offline verdict on a confirming attempt's answer."""

    verdict: Verdict | None  # None: the answer stands
    most_copies: int  # the confirmed unit's copies let through
    reason: str = ""


def judge_confirming(
    text: str,
    tolerance: Tolerance,
    finish_reason: str | None,
    tokens: int | None,
    max_tokens: int,
    config: DetectorConfig | None = None,
) -> ConfirmJudgement:
    """Whether an answer that ended is free of loops but for the confirmed unit within its
    bound: read as the stream was (a run past the bound, or another loop, is one), then the
    offline scorer on the answer less the runs let through."""
    detector = TolerantDetector(lambda: LoopDetector(config), tolerance)
    found = None
    for start in range(0, len(text), _JUDGE_CHUNK):
        if (found := detector.feed(text[start : start + _JUDGE_CHUNK])) is not None:
            break
    found = found or detector.finish()
    most = sum(s.copies for s in detector.spans)
    if found is not None:
        verdict = Verdict(str(found.kind), int(found.period), int(found.onset))
        repeats = int(found.repeats)
        ran = repeats > tolerance.bound and tolerance.matches(
            text[found.onset : found.onset + found.period], found.kind, bool(found.drift)
        )
        reason = f"ran {repeats} copies (bound {tolerance.bound})" if ran else "another loop"
        return ConfirmJudgement(verdict, max(most, repeats if ran else 0), reason)
    rest = _without(text, detector.spans)
    scoring = ScoreConfig(detector=config) if config else ScoreConfig()
    score = score_output(rest, finish_reason, tokens, max_tokens, scoring)
    if not score.degenerate:
        return ConfirmJudgement(None, most)
    verdict = Verdict(score.kind or "offline", score.period or 0, score.onset or 0)
    return ConfirmJudgement(verdict, most, f"offline scorer: {score.reason}")


def _without(text: str, spans: list[Span]) -> str:
    """`text` less the runs let through."""
    kept, at = [], 0
    for span in spans:
        kept.append(text[at : span.start])
        at = max(at, span.end)
    return "".join(kept) + text[at:]
