"""Streaming loop detection: feed text chunks as they are generated, stop at the first loop.

Cost model: each fed character is normalised once (`str.translate`, then one regex pass for
the shape view, where every number reads as `0`) and appended to two bounded tails. Every
`check_stride` raw characters the tail ends are tested for periodicity: one `rfind` of the
last characters per view settles most checks, and only a recurring tail costs a handful of
C-level slice comparisons (`periodic_loops`). Completed lines go to a line tracker and to the
structural tracker (`structure`: rows, sections and sentences that come back in step). Checks
happen at fixed offsets of the text, so the verdict does not depend on how the text was cut
into chunks; memory is bounded by `tail_window` (normalised) and eight times that (raw).
"""

import re
from dataclasses import replace

from app.degeneration.charclass import (
    DELETED_CHARS,
    FILL_CHARS,
    UnitClass,
    exact_and_shape_views,
)
from app.degeneration.config import (
    JSON_ALWAYS,
    JSON_NEVER,
    JSON_WHEN_OPENED,
    DetectorConfig,
    LoopVerdict,
)
from app.degeneration.json_strings import JsonStringReader, opens_as_json
from app.degeneration.lines import LineLoop, LineRepeatTracker
from app.degeneration.periodic_loops import find_char_run, find_exact_loop, find_shape_loop
from app.degeneration.periodicity import candidate_periods, is_periodic
from app.degeneration.raw_offsets import periodic_verdict
from app.degeneration.segments import only_table_rows
from app.degeneration.short_runs import find_short_run, may_end_in_short_run
from app.degeneration.structure import StructureTracker

_UNIT_EXCERPT_CHARS = 200
_LETTER_RE = re.compile(r"[^\W\d_]")
_SENTENCE_ENDS = (".", "!", "?")  # `. ` split across two pieces still ends a sentence
_NOT_SYMBOLS = FILL_CHARS | frozenset("0123456789")
# What a run of fill may hold: leaders and rules, and the spaces between them (not a newline).
_FILL_RUN_CHARS = "".join(sorted(FILL_CHARS)) + " \t" + "".join(DELETED_CHARS.split("\n"))


class LoopDetector:
    """Online detector of degenerate repetition in generated text (tokenizer-agnostic)."""

    def __init__(self, config: DetectorConfig | None = None) -> None:
        self._config = config or DetectorConfig()
        self.reset()

    def reset(self) -> None:
        """Forget everything fed so far."""
        self._exact = ""
        self._shape = ""
        self._raw = ""
        self._length = 0
        self._kept_piece = ""  # last piece that had visible characters ...
        self._kept_piece_end = 0  # ... and the raw offset where it ended
        self._fill_from = 0  # raw offset after the last character that is not fill (or a newline)
        self._next_check = self._config.check_stride
        self._next_drift_check = self._config.drift_check_stride
        self._lines = LineRepeatTracker(self._config)
        self._structure = StructureTracker(self._config)
        self._verdict: LoopVerdict | None = None
        # JSON answers: a second detector reads the decoded string values (`json_strings`).
        self._json: JsonStringReader | None = None
        self._strings: LoopDetector | None = None
        self._segments_on = True
        self._watch: str | None = None  # None (plain text), "pending" (not yet known), "json"
        self._pending = ""
        if self._config.json_strings == JSON_ALWAYS:
            self._start_json("")
        elif self._config.json_strings == JSON_WHEN_OPENED:
            self._watch = "pending"

    @property
    def config(self) -> DetectorConfig:
        return self._config

    @property
    def verdict(self) -> LoopVerdict | None:
        """The first loop found, if any; it stays until `reset`."""
        return self._verdict

    @property
    def text_length(self) -> int:
        """Raw characters fed so far."""
        return self._length

    @property
    def buffered_chars(self) -> int:
        """Characters held in memory (normalised tails plus raw tail); bounded."""
        return len(self._exact) + len(self._shape) + len(self._raw)

    def feed(self, chunk: str) -> LoopVerdict | None:
        """Consume the next chunk; return the verdict once the text is looping."""
        if self._watch is not None:
            return self._feed_watched(chunk)
        if self._verdict is None and self._length + len(chunk) <= self._next_check:
            self._consume(chunk)  # the common case, inline: one call fewer per chunk
            return self._verdict
        return self._feed_text(chunk)

    def _feed_text(self, chunk: str) -> LoopVerdict | None:
        if self._verdict is None and self._length + len(chunk) <= self._next_check:
            self._consume(chunk)  # the common case: the chunk ends at or before a check
            return self._verdict
        position = 0
        while position < len(chunk) and self._verdict is None:
            cut = min(len(chunk), position + self._next_check - self._length)
            self._consume(chunk[position:cut])
            position = cut
        self._length += len(chunk) - position
        return self._verdict

    def finish(self) -> LoopVerdict | None:
        """The text is complete: test its end too, even between two check offsets."""
        raw_base = self._length - len(self._raw)
        for tracker in (self._lines, self._structure):
            if self._verdict is None and self._segments_on:
                line_loop = tracker.finish(self._raw, raw_base)
                if line_loop is not None:
                    self._verdict = self._line_verdict(line_loop)
        fill_run = self._length - self._fill_from
        if self._verdict is None and fill_run >= self._config.fill_min_covered:
            self._verdict = self._fill_run_verdict()
        if self._verdict is None:
            self._verdict = self._check() or self._drift_check()
        if self._verdict is None and self._strings is not None:
            self._verdict = self._string_verdict(self._strings.finish())
        return self._verdict

    def _start_json(self, seen: str) -> None:
        """Read the answer as JSON from here: its lines are its syntax, one record per object
        (records whose values differ are not a loop); lines and sentences are read in the
        string values. `seen` is the text fed so far."""
        self._watch, self._segments_on = "json", False
        self._json = JsonStringReader()
        self._strings = LoopDetector(replace(self._config, json_strings=JSON_NEVER))
        decoded = self._json.feed(seen)
        if decoded:
            self._strings.feed(decoded)

    def _feed_watched(self, chunk: str) -> LoopVerdict | None:
        if self._watch == "pending":
            seen = self._pending
            opens = opens_as_json(seen + chunk)
            if opens is None:
                self._pending = seen + chunk
                return self._feed_text(chunk)
            self._pending = ""
            if not opens:
                self._watch = None
                return self._feed_text(chunk)
            self._start_json(seen)
        verdict = self._feed_text(chunk)
        strings, reader = self._strings, self._json
        assert strings is not None and reader is not None
        decoded = reader.feed(chunk)
        if verdict is None and decoded and strings.verdict is None:
            self._verdict = self._string_verdict(strings.feed(decoded))
        return self._verdict

    def _string_verdict(self, inner: LoopVerdict | None) -> LoopVerdict | None:
        """A loop in the decoded string values, its offsets mapped back to the raw text."""
        if inner is None or self._json is None:
            return None
        onset = min(self._json.raw_offset(inner.onset), self._length)
        return replace(inner, onset=onset, covered=self._length - onset)

    def _consume(self, piece: str) -> None:
        # The hot path: everything a 16-character chunk costs happens here, on locals.
        config = self._config
        start = self._length
        kept, shaped = exact_and_shape_views(piece)
        if kept:
            window = config.tail_window
            exact = self._exact  # rebinding through a local lets CPython grow it in place
            self._exact = ""
            exact += kept
            if len(exact) > 2 * window:
                exact = exact[-window:]
            self._exact = exact
            shape = self._shape
            self._shape = ""
            if shaped[:1] == "0" and shape[-1:] == "0":
                shaped = shaped[1:]  # a number cut by the chunk boundary is still one number
            shape += shaped
            if len(shape) > 2 * window:
                shape = shape[-window:]
            self._shape = shape
            self._kept_piece = piece
            self._kept_piece_end = start + len(piece)
        not_fill = len(piece.rstrip(_FILL_RUN_CHARS))
        if not_fill:
            self._fill_from = start + not_fill
        raw = self._raw
        self._raw = ""
        raw += piece
        if len(raw) > 8 * config.tail_window:
            raw = raw[-4 * config.tail_window :]
        self._raw = raw
        self._length = length = start + len(piece)
        if self._segments_on and (
            "\n" in piece
            or "。" in piece
            or ". " in piece
            or (piece[:1] == " " and raw[-len(piece) - 1 : -len(piece)] in _SENTENCE_ENDS)
            or ("." in piece and not piece.isascii())
        ):
            line_loop = self._lines.feed(raw, length - len(raw), start) if "\n" in piece else None
            line_loop = line_loop or self._structure.feed(raw, length - len(raw), start)
            if line_loop is not None:
                self._verdict = self._line_verdict(line_loop)
                return
        if length == self._next_check:
            self._next_check += config.check_stride
            self._verdict = self._check_now(length)

    def _check_now(self, length: int) -> LoopVerdict | None:
        if length - self._fill_from >= self._config.fill_min_covered:
            fill = self._fill_run_verdict()
            if fill is not None:
                return fill
        if self._structure.candidate is not None:
            line_loop = self._structure.confirm(self._raw, length - len(self._raw))
            if line_loop is not None:
                return self._line_verdict(line_loop)
        verdict = self._check() if self._tail_recurs(self._exact) else None
        if verdict is None and length >= self._next_drift_check:
            self._next_drift_check += self._config.drift_check_stride
            # A drift loop has words in every copy: a tail of numbers and rules is a table
            # (rows that come back with other numbers are the structural tracker's job).
            shape = self._shape
            tail_has_words = _LETTER_RE.search(
                shape, max(0, len(shape) - self._config.anchor_chars)
            )
            if tail_has_words and self._tail_recurs(shape):
                verdict = self._drift_check()
        return verdict

    def _tail_recurs(self, exact: str) -> bool:
        """Cheap pre-test: could the tail be a loop at all? Settles most checks."""
        config = self._config
        end = len(exact)
        anchor_chars = config.anchor_chars
        if end <= anchor_chars:
            return end > 1
        if self._length - self._kept_piece_end + config.check_stride >= config.blank_run_min:
            return True
        lowest = end - anchor_chars - config.max_period
        if exact.rfind(exact[end - anchor_chars :], lowest if lowest > 0 else 0, end - 1) >= 0:
            return True
        # Only a run of one symbol (`!!!`) can be a loop shorter than the anchor: runs of
        # letters, digits or fill need more characters than the anchor holds.
        last = exact[-1]
        return last == exact[-2] and not last.isalpha() and last not in _NOT_SYMBOLS

    def _check(self) -> LoopVerdict | None:
        if self._blank_run():
            return self._blank_verdict()
        exact = self._exact
        loop = find_char_run(exact, self._config) or find_exact_loop(exact, self._config)
        raw_base = self._length - len(self._raw)
        if loop is None:
            if may_end_in_short_run(exact, self._config):
                return find_short_run(self._raw, raw_base, self._config)
            return None
        if loop.unit_class is UnitClass.FILL:
            run = self._length - self._fill_from
            if run <= self._header_width(run):
                return None  # rules repeated along a separator row no wider than its header
        return periodic_verdict(self._raw, raw_base, loop)

    def _drift_check(self) -> LoopVerdict | None:
        loop = find_shape_loop(self._shape, self._config)
        if loop is None:
            return None
        verdict = periodic_verdict(self._raw, self._length - len(self._raw), loop)
        if only_table_rows(verdict.unit):
            letters = len(_LETTER_RE.findall(verdict.unit))
            if verdict.repeats < self._config.drift_row_repeats(letters):
                return None  # rows of a real table may differ in their numbers only
        if self._ends_in_exact_copies():
            return None  # an exact repeat: the exact view's thresholds judge it (forms, rules)
        return verdict

    def _ends_in_exact_copies(self) -> bool:
        """Whether the last two copies are identical in the exact view (not drifting)."""
        exact, config = self._exact, self._config
        end = len(exact)
        shifts = candidate_periods(exact, end, config.anchor_chars, config.max_period, 4)
        return any(is_periodic(exact, end, shift, 2 * shift) for shift in shifts)

    def _fill_run_verdict(self) -> LoopVerdict | None:
        """Leaders and rules mixed (`---- ... ......-----`) with no word, number or line break
        for `fill_min_covered` characters: no page has a line of fill that long (contents
        leaders and form blanks end within the line's width), but a model that lost its place
        on a contents page runs on like that, never periodic enough for the other checks. Blanks
        alone are `blank_run_min`'s (None)."""
        run = self._length - self._fill_from
        tail = self._raw[-run:] if run <= len(self._raw) else self._raw
        if not tail.strip(DELETED_CHARS):
            return None  # blanks alone are `blank_run_min`'s to judge
        if run <= self._header_width(run):
            return None  # a separator row as wide as the header row above it
        return LoopVerdict(
            kind="char_run",
            period=1,
            repeats=float(run),
            onset=self._fill_from,
            covered=run,
            unit=tail.strip()[:_UNIT_EXCERPT_CHARS] or tail[:_UNIT_EXCERPT_CHARS],
        )

    def _header_width(self, run: int) -> int:
        """Characters a fill run may hold as the separator row of a table: the width of the
        row above it, plus `separator_margin`, when the run is a row (`|---|---|`) right under
        a table row; else 0. A table's separator is as wide as its header, whatever the
        table's width (docling pads both to the widest cell); a model that loops on the
        separator goes on past it."""
        raw = self._raw
        start = raw.rfind("\n", 0, len(raw) - run + 1) + 1
        if not raw.startswith("|", start) or start < 2:
            return 0
        above = raw.rfind("\n", 0, start - 1) + 1
        header = raw[above : start - 1].strip()
        if not (header.startswith("|") and header.endswith("|")):
            return 0
        return len(header) + self._config.separator_margin

    def _blank_run(self) -> int:
        """Length of the trailing whitespace if it is a loop in itself, else 0."""
        piece = self._kept_piece
        trailing = len(piece) - len(piece.rstrip(DELETED_CHARS))
        run = self._length - self._kept_piece_end + trailing
        return run if run >= self._config.blank_run_min else 0

    def _blank_verdict(self) -> LoopVerdict:
        run = self._blank_run()
        return LoopVerdict(
            kind="char_run",
            period=1,
            repeats=float(run),
            onset=self._length - run,
            covered=run,
            unit=" ",
        )

    def _line_verdict(self, loop: LineLoop) -> LoopVerdict:
        covered = loop.end - loop.onset
        return LoopVerdict(
            kind="line" if loop.distinct_lines == 1 else "block",
            period=loop.period,
            repeats=round(covered / max(1, loop.period), 2),
            onset=loop.onset,
            covered=covered,
            unit=loop.unit[:_UNIT_EXCERPT_CHARS],
            drift=loop.drift,
            near=loop.near,
        )
