"""Structural view: segments (lines, CJK sentences) that come back in step.

Character periodicity needs copies that are identical once whitespace is removed (or once
every number reads as one `0`). Three loop shapes escape it, and all three keep the *line
structure* of their copies:

- a table row or a section (heading plus table) re-emitted with other numbers, longer than
  the periodic search reaches;
- a sentence or a field coming back with one small change (a counter, a translated word);
- a diagram row (box-drawing, pipes and spaces) repeated inside a code fence, where the
  spaces that the exact view deletes are the content.

Each completed segment gets a key (the shape view of its line; the raw row inside a fence),
and `runs[p]` counts how many segments in a row match the one `p` segments back. Three copies
in step make a candidate; the first characters of a fourth confirm it, as for periodic loops.
A loop counts only when its copies carry words (`drift_min_letters`) or are diagram rows, and
are not exact repeats that fit the periodic search (those are left to its thresholds). Healthy
tables do not match: their rows differ in labels, and rows of numbers alone carry no words.
"""

import re
from collections import deque
from dataclasses import dataclass

from app.degeneration.charclass import EXACT_TABLE, is_mostly_fill, shape_view, strip_markup
from app.degeneration.config import DetectorConfig
from app.degeneration.lines import EMPHASIS_TABLE, LineLoop

_BOUNDARY_RE = re.compile("[\n。]")
_CJK_RE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LETTER_RE = re.compile(r"[^\W\d_]")
_FENCE = "```"


@dataclass(frozen=True, slots=True)
class Segment:
    key: str  # what is compared: the shape view, or the raw row of a diagram
    exact: str  # exact view, to tell exact repeats from drifting ones
    start: int  # raw offsets
    end: int
    letters: int  # words it adds to a unit (0 for rules, form blanks and diagram rows)
    diagram: bool


@dataclass(frozen=True, slots=True)
class _Candidate:
    step: int  # segments per copy
    onset: int
    period: int  # raw characters per copy
    expected: Segment  # the segment the next copy starts with
    drift: bool  # copies differ (numbers or a word), not an exact repeat


def _is_row(key: str) -> bool:
    return key.startswith("|") or key.startswith("<tr") or key.startswith("<td")


def near_repeat(first: str, second: str, min_chars: int) -> bool:
    """Two keys that differ in one place only, by at most a sixth of their length."""
    size = max(len(first), len(second))
    allowed = max(2, size // 6)
    if min(len(first), len(second)) < min_chars or abs(len(first) - len(second)) > allowed:
        return False
    if first[:4] != second[:4] and first[-4:] != second[-4:]:
        return False
    prefix = _common_prefix(first, second)
    suffix = _common_prefix(first[prefix:][::-1], second[prefix:][::-1])
    return size - prefix - suffix <= allowed


def _common_prefix(first: str, second: str) -> int:
    low, high = 0, min(len(first), len(second))
    while low < high:  # bisection on C-level slice comparisons
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class StructureTracker:
    """Reads completed segments out of the detector's raw tail; only pieces holding a line
    break or a CJK full stop cost anything, plus one prefix test per check while a candidate
    waits for its fourth copy."""

    def __init__(self, config: DetectorConfig, min_repeats: int | None = None) -> None:
        self._config = config
        self._min_repeats = min_repeats or config.min_repeats
        self._max_step = config.structure_max_lines
        self._start = 0
        self._in_fence = False
        self._segments: deque[Segment] = deque(maxlen=self._max_step * (self._min_repeats + 1))
        self._runs = [0] * (self._max_step + 1)
        self._drifts = [0] * (self._max_step + 1)  # copies that differ in the exact view ...
        self._changed_words = [0] * (self._max_step + 1)  # ... in more than their numbers
        self._onsets = [0] * (self._max_step + 1)  # raw start of the first copy of each run
        self.candidate: _Candidate | None = None

    def feed(self, raw: str, raw_base: int, piece_start: int) -> LineLoop | None:
        """Complete the segments that end in `raw` (starting at `raw_base`) after `piece_start`."""
        for boundary in _BOUNDARY_RE.finditer(raw, max(0, piece_start - raw_base)):
            loop = self._complete(raw, raw_base, raw_base + boundary.end())
            if loop is not None:
                return loop
        return None

    def confirm(self, raw: str, raw_base: int) -> LineLoop | None:
        """A candidate is a loop once the pending segment starts like its expected copy."""
        candidate = self.candidate
        if candidate is None or self._start < raw_base:
            return None
        partial = self._key(raw[self._start - raw_base :], candidate.expected.diagram)
        need = min(len(candidate.expected.key), self._config.confirm_chars)
        if len(partial) < need or not candidate.expected.key.startswith(partial[:need]):
            return None
        return self._loop(candidate, raw_base + len(raw))

    def finish(self, raw: str, raw_base: int) -> LineLoop | None:
        """Treat the pending partial segment as complete (end of text)."""
        end = raw_base + len(raw)
        return self._complete(raw, raw_base, end) if end > self._start else None

    def ends_in_loop(self, raw: str, raw_base: int, min_period: int) -> LineLoop | None:
        """Offline: the text ends inside copies (`min_repeats` of them) of a unit at least
        `min_period` raw characters long; exact repeats count too."""
        candidate = self._candidate(allow_exact=True)
        if candidate is None or candidate.period < min_period:
            return None
        tail = raw[max(0, self._start - raw_base) :]
        partial = self._key(tail, candidate.expected.diagram)
        if not candidate.expected.key.startswith(partial):
            return None
        return self._loop(candidate, raw_base + len(raw))

    def _complete(self, raw: str, raw_base: int, end: int) -> LineLoop | None:
        start = self._start
        self._start = end
        segment = self._segment(raw, raw_base, start, end)
        if segment is None:
            return None
        waiting = self.candidate
        self._push(segment)
        if waiting is not None and self._runs[waiting.step] > (self._min_repeats - 1) * (
            waiting.step
        ):
            return self._loop(waiting, end)
        self.candidate = self._candidate(allow_exact=False)
        return None

    def _segment(self, raw: str, raw_base: int, start: int, end: int) -> Segment | None:
        if start < raw_base:  # longer than the raw tail: breaks any run
            return Segment(key="\0", exact="\0", start=start, end=end, letters=0, diagram=False)
        line = raw[start - raw_base : end - raw_base]
        exact = line.translate(EXACT_TABLE)
        if not exact:
            return None  # blank lines are neutral
        if exact.startswith(_FENCE):
            self._in_fence = not self._in_fence
            return None
        fill = is_mostly_fill(exact)
        if self._in_fence and fill:
            row = self._key(line, diagram=True)
            if len(row) < self._config.diagram_min_chars or len(exact) < 3:
                return None
            return Segment(row, exact, start, end, letters=0, diagram=True)
        key = self._key(line, diagram=False)
        letters = 0 if fill else len(_LETTER_RE.findall(key))
        return Segment(key, exact, start, end, letters=letters, diagram=False)

    @staticmethod
    def _key(line: str, diagram: bool) -> str:
        if diagram:
            return line.expandtabs().strip("\n").rstrip()
        exact = line.translate(EXACT_TABLE)
        return shape_view(strip_markup(exact).translate(EMPHASIS_TABLE))

    def _push(self, segment: Segment) -> None:
        segments = self._segments
        for step in range(1, self._max_step + 1):
            if step <= len(segments) and self._same(segment, segments[-step]):
                if not self._runs[step]:
                    self._onsets[step] = segments[-step].start
                self._runs[step] += 1
                self._drifts[step] += segment.exact != segments[-step].exact
                self._changed_words[step] += segment.key != segments[-step].key
            else:
                self._runs[step] = self._drifts[step] = self._changed_words[step] = 0
        segments.append(segment)

    def _same(self, segment: Segment, earlier: Segment) -> bool:
        if segment.key == earlier.key:
            return True
        if segment.diagram or earlier.diagram:
            return False
        min_chars = self._config.fuzzy_min_chars
        if _CJK_RE.search(segment.key):
            min_chars //= 3  # a CJK character carries about a word
        return near_repeat(segment.key, earlier.key, min_chars)

    def _candidate(self, allow_exact: bool) -> _Candidate | None:
        """The shortest step at which the last segments form `min_repeats` copies."""
        segments = list(self._segments)
        for step in range(1, self._max_step + 1):
            matched = self._runs[step]
            if matched < (self._min_repeats - 1) * step:
                continue
            unit = segments[-step:]
            if not all(s.diagram for s in unit):
                if sum(s.letters for s in unit) < self._config.drift_min_letters:
                    return None
                exact_chars = sum(len(s.exact) for s in unit)
                long_block = exact_chars > self._config.max_period
                if not (allow_exact or self._drifts[step] or long_block):
                    return None  # an exact repeat the periodic search judges
                if self._drifts[step] and not self._changed_words[step] and not long_block:
                    numbers = sum(s.key.count("0") for s in unit)
                    if numbers * self._config.drift_max_chars_per_number < exact_chars:
                        return None  # only a heading number changes: a document's sections
                    if step == 1 and _is_row(unit[0].key) and not self._row_repeats(matched):
                        return None  # rows of a real table may differ in numbers only
            period = segments[-1].end - segments[-1 - step].end
            drift = bool(self._drifts[step])
            return _Candidate(step, self._onsets[step], period, unit[0], drift)
        return None

    def _row_repeats(self, matched: int) -> bool:
        return matched + 1 >= self._config.drift_row_min_repeats

    def _loop(self, candidate: _Candidate, end: int) -> LineLoop:
        unit = list(self._segments)[-candidate.step :]
        return LineLoop(
            onset=candidate.onset,
            end=end,
            period=candidate.period,
            distinct_lines=candidate.step,
            unit="\n".join(segment.key for segment in unit),
            drift=candidate.drift,
        )
