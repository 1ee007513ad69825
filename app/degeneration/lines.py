"""Line-level loop tracking: the same line (or a few lines) coming back, maybe misspelt.

Character periodicity misses loops whose copies mutate (`Hakate Toolbox`, `Hekate Toolbox`,
`HakateToolbox`, an odd line in between). Here each completed line is reduced to a key and
compared with the recent lines; when nearly every recent line repeats one of its predecessors,
the text is looping. Numbers are kept in the key, so `List item 1`, `List item 2` are
different lines, while a copy that differs in a letter or two counts as a repeat.
"""

import re
from collections import deque
from dataclasses import dataclass
from operator import ne

from app.degeneration.charclass import exact_view, is_mostly_fill, strip_markup
from app.degeneration.config import DetectorConfig

# Markdown emphasis, quotes and list bullets do not change what a line says.
EMPHASIS_TABLE: dict[int, int | None] = {ord(ch): None for ch in "*_#>`"}
_ASCII_EMPHASIS = b"*_#>`"
_LETTER_RE = re.compile(r"[^\W\d_]")
# Separator rules: drawn to divide content, never to be filled in (unlike `_` and `.`).
_RULE_CHARS = frozenset("=-*~#+─━═‐‑‒–—―−")
_NUMBER_STARTS = frozenset("-0123456789")
_NUMBER_LINE_RE = re.compile(r"-?\d{1,9}(?:\.\d{1,6})?")
# Edit-tolerant comparison is for short lines only: it is the costly path, and a loop of
# long lines is caught by character periodicity anyway.
_NEAR_DUPLICATE_MAX_CHARS = 64


@dataclass(frozen=True, slots=True)
class LineLoop:
    """Raw offsets of a line loop: where its first line starts and where detection happened."""

    onset: int
    end: int
    period: int  # raw characters between the last line and its earlier copy
    distinct_lines: int  # lines per copy: 1 for a repeated line, more for a block
    unit: str
    drift: bool  # some copies are near-duplicates, not exact repeats
    near: bool = False  # some copies differ by a word (letters), not only in numbers


@dataclass(slots=True)
class _Line:
    key: str
    start: int
    end: int
    repeat_of: int  # index distance to the earlier copy, 0 when the line is new
    exact: bool = True  # the copy is identical, not a near-duplicate


@dataclass(slots=True)
class _Count:
    last: float  # the last number, on the line starting at `last_start`
    last_start: int
    step: float = 0.0
    steps: int = 0  # steps of `step` in a row
    onset: int = 0  # where the first line of the run starts


def near_duplicate(first: str, second: str) -> bool:
    """Same length, at most one character in six differs, and no differing digit."""
    if len(first) != len(second):
        return False
    if sum(map(ne, first, second)) > max(1, len(first) // 6):
        return False
    pairs = zip(first, second, strict=True)
    return not any(a != b and (a.isdigit() or b.isdigit()) for a, b in pairs)


class LineRepeatTracker:
    """Reads completed lines out of the detector's raw tail and reports a line loop as soon
    as one is established. Only pieces that contain a line break cost anything."""

    def __init__(self, config: DetectorConfig) -> None:
        self._config = config
        self._line_start = 0
        # One more than the history: a line repeating the oldest one in it still finds its copy.
        self._lines: deque[_Line] = deque(maxlen=max(config.line_window, config.line_history + 1))
        self._rule = ""  # the rule line stacked last, how many times, from where
        self._rule_run = 0
        self._rule_onset = 0
        self._count: _Count | None = None  # lines of one number counting on

    def feed(self, raw: str, raw_base: int, piece_start: int) -> LineLoop | None:
        """Scan the raw tail (`raw` starts at offset `raw_base`) from `piece_start` on."""
        newline = raw.find("\n", piece_start - raw_base)
        while newline >= 0:
            loop = self._complete_line(raw, raw_base, raw_base + newline)
            if loop is not None:
                return loop
            newline = raw.find("\n", newline + 1)
        return None

    def finish(self, raw: str, raw_base: int) -> LineLoop | None:
        """Treat the pending partial line as complete (end of text)."""
        end = raw_base + len(raw)
        return self._complete_line(raw, raw_base, end) if end > self._line_start else None

    def _complete_line(self, raw: str, raw_base: int, end: int) -> LineLoop | None:
        start = self._line_start
        self._line_start = end + 1
        if end - start > self._config.line_max_chars or start < raw_base:
            self._lines.append(_Line(key="", start=start, end=end, repeat_of=0))  # not compared
            return None
        visible = exact_view(raw[start - raw_base : end - raw_base])
        first = visible[:1]  # blank lines ("") are neutral: they neither stack nor break
        if first and (first in _RULE_CHARS or self._rule_run or _is_lone_mark(visible)):
            loop = self._stack_rule(visible, start, end)
            if loop is not None:
                return loop
        if first and (first in _NUMBER_STARTS or self._count is not None):
            loop = self._count_on(visible, start, end)
            if loop is not None:
                return loop
        key = _without_emphasis(strip_markup(visible))
        if not _LETTER_RE.search(key) or is_mostly_fill(visible):
            # Numbers, rules, blank lines, bare markup (`<!-- image -->`) and form blanks
            # (`Name: ______`) are neutral: they neither repeat nor break a loop.
            return None
        repeat_of, exact = self._repeat_of(key)
        self._lines.append(_Line(key, start, end, repeat_of, exact))
        return self._loop_if_established()

    def _stack_rule(self, visible: str, start: int, end: int) -> LineLoop | None:
        """Count identical rule lines stacked in a row (blank lines between them are neutral)."""
        # A rule is drawn (`---`); one or two marks alone on a line are a marker (`*`, `-`,
        # `•`): an empty list item, a star on an exercise, judged as lone marks.
        rule = len(visible) > 2 and _RULE_CHARS.issuperset(visible)
        if not (rule or _is_lone_mark(visible)):
            self._rule_run = 0
            return None
        if visible == self._rule and self._rule_run:
            self._rule_run += 1
        else:
            self._rule, self._rule_run, self._rule_onset = visible, 1, start
        config = self._config
        need = config.rule_line_min_repeats if rule else config.lone_mark_min_repeats
        if self._rule_run < need:
            return None
        return LineLoop(
            onset=self._rule_onset,
            end=end,
            period=(end - self._rule_onset) // self._rule_run,
            distinct_lines=1,
            unit=visible,
            drift=False,
        )

    def _count_on(self, visible: str, start: int, end: int) -> LineLoop | None:
        """Follow lines of one number counting on by a fixed step."""
        if _NUMBER_LINE_RE.fullmatch(visible) is None:
            self._count = None
            return None
        value = float(visible)
        count = self._count
        if count is None:
            self._count = _Count(value, start)
            return None
        step = round(value - count.last, 6)
        if count.steps and step == count.step:
            count.steps += 1
        else:  # a new run, from the previous line
            count.step, count.steps, count.onset = step, int(step != 0), count.last_start
        count.last, count.last_start = value, start
        if count.steps < self._config.counter_min_steps:
            return None
        return LineLoop(
            onset=count.onset,
            end=end,
            period=(end - count.onset) // (count.steps + 1),
            distinct_lines=1,
            unit=visible,
            drift=True,
        )

    def _repeat_of(self, key: str) -> tuple[int, bool]:
        """Distance (in lines) to the nearest earlier copy of a new line (0 when there is
        none), and whether that copy is exact."""
        history = list(self._lines)[-self._config.line_history :]
        size = len(key) if len(key) <= _NEAR_DUPLICATE_MAX_CHARS else -1
        for distance, earlier in enumerate(reversed(history), start=1):
            other = earlier.key
            if other == key:
                return distance, True
            if len(other) == size and near_duplicate(other, key):
                return distance, False
        return 0, True

    def _loop_if_established(self) -> LineLoop | None:
        """A loop repeats its lines at one fixed distance; natural reuse of list items or
        headers repeats them at varying distances."""
        last = self._lines[-1]
        if not last.repeat_of:
            return None
        config = self._config
        lines = list(self._lines)
        window = lines[-config.line_window :]
        in_step = [line for line in window if line.repeat_of == last.repeat_of]
        if len(in_step) < config.line_min_repeats:
            return None
        if sum(len(line.key) for line in in_step) < config.line_min_chars:
            return None
        first = next(i for i, line in enumerate(lines) if line.repeat_of == last.repeat_of)
        onset = lines[max(0, first - last.repeat_of)].start
        earlier = lines[-1 - last.repeat_of]
        return LineLoop(
            onset=onset,
            end=last.end,
            period=last.start - earlier.start,
            distinct_lines=last.repeat_of,
            unit="\n".join(line.key for line in lines[-last.repeat_of :]),
            drift=not all(line.exact for line in in_step),
            # keys keep numbers and near-duplicates differ in no digit: letters changed
            near=not all(line.exact for line in in_step),
        )


# Leaders and blanks: a text layer writes a contents page's leader dots one per line (168 in a
# row in the corpus), so a line of them is fill, judged as fill is.
_LEADERS = frozenset(".,·…‥⋯_")


def _is_lone_mark(visible: str) -> bool:
    """A line of one or two marks and nothing else (`•`, `}`, `→`), not leaders."""
    return (
        len(visible) <= 2
        and not any(char.isalnum() for char in visible)
        and not _LEADERS.issuperset(visible)
    )


def _without_emphasis(text: str) -> str:
    """`text.translate(EMPHASIS_TABLE)`, through a byte table when the text is ASCII."""
    if text.isascii():
        return text.encode("ascii").translate(None, _ASCII_EMPHASIS).decode("ascii")
    return text.translate(EMPHASIS_TABLE)
