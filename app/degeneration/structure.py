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

from app.degeneration.charclass import (
    collapse_number_words,
    collapse_numbers,
    content_chars,
    exact_view,
    is_mostly_fill,
    line_key_chars,
    strip_markup,
)
from app.degeneration.config import DetectorConfig
from app.degeneration.lines import LineLoop
from app.degeneration.segments import (
    BARELY_STARTED,
    WORD_CHARS,
    Segment,
    is_row,
    near_repeat,
    starts_like,
)
from app.degeneration.stutter import stutter_in_line

# Line breaks, CJK full stops, Latin sentence ends (kept only after a word: `feed`), and
# full stops right after a CJK or Hangul character (Korean and Japanese runs need no space).
_BOUNDARY_RE = re.compile(r"[\n。]|[.!?] |(?<=[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af])[.!?]")
_CJK_RE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_LETTER_RE = re.compile(r"[^\W\d_]")
_FENCE = "```"
# Info strings of a fence that wraps a whole markdown answer (```` ```markdown ````): inside it a
# bare fence opens a code block rather than closing the wrapper, as chat models write it.
_WRAPPER_INFO = frozenset({"markdown", "md"})
_NOT_SENTENCE_END = frozenset(". \t0123456789")
_MAX_FENCE_DEPTH = 8  # bounded memory; deeper nesting is read as staying inside
_ROW_LOOKBACK = 256  # characters back from a sentence end where a table row's bar must be


@dataclass(frozen=True, slots=True)
class _Candidate:
    step: int  # segments per copy
    onset: int
    period: int  # raw characters per copy
    expected: Segment  # the segment the next copy starts with
    drift: bool  # copies differ (numbers or a word), not an exact repeat
    near: bool  # ... by a word besides numbers


def _exact(segment: Segment) -> str:
    return exact_view(segment.line)


def _counted_key(segment: Segment) -> str:
    """The segment's key with English number words read as numbers (`the sixth item`)."""
    if segment.counted_key is None:
        words = collapse_number_words(strip_markup(segment.line))
        segment.counted_key = collapse_numbers(line_key_chars(words))
    return segment.counted_key


def _in_table_row(raw: str, at: int) -> bool:
    # A bounded look for a bar first: prose has none, and its line start may lie far back.
    if raw.rfind("|", max(0, at - _ROW_LOOKBACK), at) < 0:
        return False
    line_start = raw.rfind("\n", 0, at) + 1
    return raw[line_start : line_start + 8].lstrip().startswith("|")


class StructureTracker:
    """Reads completed segments out of the detector's raw tail; only pieces holding a line
    break or a CJK full stop cost anything, plus one prefix test per check while a candidate
    waits for its fourth copy."""

    def __init__(self, config: DetectorConfig, min_repeats: int | None = None) -> None:
        self._config = config
        self._min_repeats = min_repeats or config.min_repeats
        self._max_step = config.structure_max_lines
        self._diagram_repeats = max(self._min_repeats, config.diagram_min_repeats)
        self._start = 0
        self._fences: list[str] = []  # open fences, outermost first: their info strings
        self._segments: deque[Segment] = deque(maxlen=self._max_step * (self._min_repeats + 1))
        self._runs = [0] * (self._max_step + 1)
        self._drifts = [0] * (self._max_step + 1)  # copies that differ in the exact view ...
        self._changed_words = [0] * (self._max_step + 1)  # ... in more than their numbers
        self._onsets = [0] * (self._max_step + 1)  # raw start of the first copy of each run
        self.candidate: _Candidate | None = None

    def feed(self, raw: str, raw_base: int, piece_start: int) -> LineLoop | None:
        """Complete the segments that end in `raw` (starting at `raw_base`) after `piece_start`."""
        # One character back: a sentence end (`. `) may straddle two pieces.
        for boundary in _BOUNDARY_RE.finditer(raw, max(0, piece_start - raw_base - 1)):
            at = boundary.start()
            if raw_base + boundary.end() <= self._start:
                continue  # completed by the previous piece
            if at and boundary.group() not in ("\n", "。") and raw[at - 1] in _NOT_SENTENCE_END:
                continue  # leader dots (`. . .`), list numbers (`1. `), decimals: not an end
            if boundary.group() != "\n" and _in_table_row(raw, at):
                continue  # a row is one record: `GEO. M.` in a cell ends no sentence
            loop = self._complete(raw, raw_base, raw_base + boundary.end())
            if loop is not None:
                return loop
        return None

    def feed_all(self, raw: str, raw_base: int) -> None:
        """Offline: complete every segment of `raw`; loops found on the way do not stop it."""
        start = raw_base
        while self.feed(raw, raw_base, start) is not None:
            start = self._start

    def confirm(self, raw: str, raw_base: int) -> LineLoop | None:
        """A candidate is a loop once the pending segment starts like its expected copy."""
        candidate = self.candidate
        if candidate is None or self._start < raw_base:
            return None
        partial = self._key(raw[self._start - raw_base :], candidate.expected.diagram)
        confirm = self._config.confirm_chars // (2 if candidate.drift else 1)
        need = min(len(candidate.expected.key), confirm)
        if len(partial) < need or not starts_like(candidate.expected, partial):
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
        if candidate is None:
            return None
        if _CJK_RE.search(candidate.expected.key):
            min_period //= 2  # a CJK character carries about a word
        if candidate.expected.diagram:
            min_period = min(min_period, self._config.diagram_min_chars)
        if candidate.period < min_period:
            return None
        tail = raw[max(0, self._start - raw_base) :]
        partial = self._key(tail, candidate.expected.diagram)
        # The cap may cut a third copy inside its changed word (`Use le gra`): a few characters
        # starting like the copy do (two whole copies are the loop; these only must not differ).
        barely_started = len(partial) < BARELY_STARTED and partial[:2] == candidate.expected.key[:2]
        if not (barely_started or starts_like(candidate.expected, partial)):
            return None
        return self._loop(candidate, raw_base + len(raw))

    def _complete(self, raw: str, raw_base: int, end: int) -> LineLoop | None:
        start = self._start
        self._start = end
        segment = self._segment(raw, raw_base, start, end)
        if segment is None:
            return None
        stutter = None if segment.diagram else stutter_in_line(segment.line)
        if stutter is not None:
            return LineLoop(
                onset=start + stutter.onset,
                end=end,
                period=stutter.period,
                distinct_lines=1,
                unit=segment.line[stutter.onset : stutter.end],
                drift=True,
            )
        waiting = self.candidate
        continued = self._push(segment)
        need = self._diagram_repeats if waiting and waiting.expected.diagram else self._min_repeats
        if waiting is not None and self._runs[waiting.step] > (need - 1) * waiting.step:
            return self._loop(waiting, end)
        self.candidate = self._candidate(allow_exact=False) if continued else None
        return None

    def _segment(self, raw: str, raw_base: int, start: int, end: int) -> Segment | None:
        if start < raw_base:  # longer than the raw tail: breaks any run
            return Segment(key="\0", line="\0", start=start, end=end, diagram=False)
        line = raw[start - raw_base : end - raw_base]
        stripped = line.strip()
        if stripped.startswith(_FENCE):
            self._toggle_fence(stripped.lstrip("`").strip().lower())
            return None
        if self._fences:
            exact = exact_view(line)
            if is_mostly_fill(exact):
                row = self._key(line, diagram=True)
                return Segment(row, line, start, end, diagram=True) if exact else None
        key = self._key(line, diagram=False)
        return Segment(key, line, start, end, diagram=False) if key else None  # blank: neutral

    def _toggle_fence(self, info: str) -> None:
        """A fence line opens a block, or closes the innermost one. Inside a markdown wrapper
        a bare fence with no code block open opens one: while streaming it cannot be told
        from the wrapper's close, and reading it as an opener keeps the rows inside a code
        block (a diagram loop there) read as rows of a fence."""
        fences = self._fences
        if fences and not info and fences[-1] not in _WRAPPER_INFO:
            fences.pop()
        elif len(fences) < _MAX_FENCE_DEPTH:
            fences.append(info)

    @staticmethod
    def _key(line: str, diagram: bool) -> str:
        if diagram:
            return line.expandtabs().strip("\n").rstrip()
        return collapse_numbers(line_key_chars(strip_markup(line)))

    def _push(self, segment: Segment) -> bool:
        """Append a segment; whether it continues any run (most segments continue none)."""
        segments, runs = self._segments, self._runs
        key = segment.key
        size, slack = len(key), max(WORD_CHARS, len(key) // 6)
        head, tail = key[:4], key[-4:]
        continued = False
        for step in range(1, min(self._max_step, len(segments)) + 1):
            earlier = segments[-step]
            other = earlier.key
            alike = counted = other == key
            if (
                not alike
                and abs(size - len(other)) <= slack
                and (other[:4] == head or other[-4:] == tail)  # `_near`'s cheap test, inline
            ):
                # Counters in words are read only on the few pairs alike at both ends (a
                # counter inside the line: `the sixth item`, `the seventh item`).
                alike = counted = (
                    other[:4] == head
                    and other[-4:] == tail
                    and _counted_key(segment) == _counted_key(earlier)
                )
                alike = alike or self._near(segment, earlier)
            if alike:
                if not runs[step]:
                    self._onsets[step] = earlier.start
                runs[step] += 1
                self._drifts[step] += _exact(segment) != _exact(earlier)
                self._changed_words[step] += not counted
                continued = True
            elif runs[step]:
                runs[step] = self._drifts[step] = self._changed_words[step] = 0
        segments.append(segment)
        return continued

    def _near(self, segment: Segment, earlier: Segment) -> bool:
        first, second = segment.key, earlier.key
        if segment.diagram or earlier.diagram:
            return False
        if first[:4] != second[:4] and first[-4:] != second[-4:]:
            return False  # the cheap tests settle most pairs before `near_repeat`
        min_chars = self._config.fuzzy_min_chars
        if min(len(first), len(second)) < min_chars:
            if not _CJK_RE.search(first):
                return False
            min_chars //= 3  # a CJK character carries about a word
        return near_repeat(first, second, min_chars)

    def _candidate(self, allow_exact: bool) -> _Candidate | None:
        """The step at which the last segments form `min_repeats` copies, if they are a loop.

        Of the steps with enough copies, the one whose run reaches furthest back is the loop's
        period: rows alike inside one copy of a section form a shorter, local run."""
        runs, need = self._runs, self._min_repeats - 1
        steps = [step for step in range(1, self._max_step + 1) if runs[step] >= need * step]
        if not steps:
            return None
        step = max(steps, key=lambda s: (runs[s] + s, -s))
        segments = list(self._segments)
        unit = segments[-step:]
        if all(s.diagram for s in unit):
            if runs[step] < (self._diagram_repeats - 1) * step:
                return None
        elif not self._words_loop(unit, step, allow_exact):
            return None
        period = segments[-1].end - segments[-1 - step].end
        drift = bool(self._drifts[step])
        near = bool(self._changed_words[step])
        return _Candidate(step, self._onsets[step], period, unit[0], drift, near)

    def _words_loop(self, unit: list[Segment], step: int, allow_exact: bool) -> bool:
        """Whether copies of these lines (not diagram rows) are a loop rather than a document
        repeating itself."""
        # Rules and form blanks (`Name: ____`) add no words to a unit.
        config = self._config
        words = [s.key for s in unit if not is_mostly_fill(_exact(s))]
        letters = sum(len(_LETTER_RE.findall(key)) for key in words)
        copies = self._runs[step] // step + 1
        counting = bool(self._drifts[step]) and not self._changed_words[step]
        # One line (or sentence; not a table row) counting on: a list until it goes on.
        one_line = sum(segment.line.endswith("\n") for segment in unit) <= 1
        listing = counting and one_line and not is_row(unit[0].key)
        counted_far = counting and copies >= config.counter_min_copies
        if letters < config.drift_min_letters and not (letters and counted_far):
            return False  # `- The sixth item`: a short line counts only when it goes on
        exact_chars = sum(len(_exact(s)) for s in unit)
        long_block = exact_chars > config.max_period
        if not (allow_exact or self._drifts[step] or long_block):
            return False  # an exact repeat the periodic search judges
        rows = all(is_row(segment.key) for segment in unit)
        # Rows whose copies change a word (a name, a label) besides numbers are how tables look
        # (one record per row): they need as many copies as cells do (`table_min_repeats`).
        records = rows and self._changed_words[step] and not long_block
        if records and self._runs[step] // step + 1 < self._config.table_min_repeats:
            return False
        if self._drifts[step] and not self._changed_words[step] and not long_block:
            # Leader dots and rules say nothing: a number per 160 characters of the rest.
            said = sum(content_chars(_exact(s)) for s in unit)
            numbers = sum(s.key.count("0") for s in unit)
            if step > 1 and numbers * config.drift_max_chars_per_number < said:
                # Only a heading number changes: a document's sections.
                return False
            if listing and exact_chars < config.drift_long_block_chars and not counted_far:
                # Lists, references and device lines count on with the rest of the line
                # unchanged for up to a page; a loop goes on (`counter_min_copies`).
                return False
            if rows and not self._row_repeats(self._runs[step], step, letters):
                return False  # rows of a real table may differ in numbers only
        return True

    def _row_repeats(self, matched: int, step: int, letters: int) -> bool:
        return matched // step + 1 >= self._config.drift_row_repeats(letters)

    def _loop(self, candidate: _Candidate, end: int) -> LineLoop:
        unit = list(self._segments)[-candidate.step :]
        return LineLoop(
            onset=candidate.onset,
            end=end,
            period=candidate.period,
            distinct_lines=candidate.step,
            unit="\n".join(segment.key for segment in unit),
            drift=candidate.drift,
            near=candidate.near,
        )
