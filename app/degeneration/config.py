"""Thresholds of the loop detector and the verdict it returns.

Lengths are counted in *normalised* characters (whitespace and invisibles removed, see
`charclass`) unless a field says otherwise. The defaults were tuned on the shared dev corpus of
real degenerate and healthy OCR/LLM outputs and are explained field by field.
"""

from dataclasses import dataclass
from typing import Literal

LoopKind = Literal["char_run", "phrase", "line", "block"]
# `DetectorConfig.json_strings`: integers, since profiles and settings give fields as such.
JSON_NEVER, JSON_ALWAYS, JSON_WHEN_OPENED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class DetectorConfig:
    """Tuning knobs of `LoopDetector`; every field is a threshold or a bound."""

    # A text unit (letters or symbols) is a loop after this many full copies ...
    min_repeats: int = 3
    # ... plus this many characters of the next copy (capped at one period). Three copies of
    # a paragraph occur in real filler text ("lorem ipsum" x3); a loop keeps going.
    confirm_chars: int = 32
    # Short units must cover at least this much, so `haha` or `(a)(b)` stay healthy.
    min_covered_chars: int = 32
    # A single repeated symbol (`!!!!`, `！！！`, emoji) is a loop from this run length ...
    char_run_min: int = 12
    # ... a single repeated letter from this one (redactions such as `XXXX` are shorter).
    letter_run_min: int = 32
    # Units of digits and separators (`0.00|`, `-3`, `0`) must repeat exactly over this much:
    # numeric tables repeat cells legitimately (and line breaks are not seen).
    numeric_min_covered: int = 256
    # ... except a unit of at most `short_run_max_period` raw characters (`0`, `1 `, `-3 `)
    # repeated `short_run_min_repeats` times over `short_run_min_chars` raw characters of one
    # line, with no table bar: healthy numbers repeat across lines or cells (`short_runs`).
    short_run_max_period: int = 4
    short_run_min_chars: int = 64
    short_run_min_repeats: int = 24
    # Units of empty markup (`<tr><td></td></tr>`) over this much: blank form rows exist.
    markup_min_covered: int = 512
    # Units of leaders and rules only (`.`, `_`, `|---`) over this much: TOC leaders, stacked
    # form blanks and empty markdown rows are long in healthy pages.
    fill_min_covered: int = 1024
    # ... except a table's separator row (`|---|---|`) right under a header row, which may be
    # as wide as that row plus this margin: on the issue-39 corpus separator rows run to 1,957
    # characters (a 489-column record table) and are never wider than their header row.
    separator_margin: int = 64
    # Table rows whose copies change a word besides numbers (one record per row) need this
    # many copies (`structure`); cells within one row have `row_cell_min_repeats`.
    table_min_repeats: int = 16
    # A cell repeated within one row (Markdown `|` or HTML `<td>`/`<th>`, no row break) needs
    # this many copies: on the issue-39 healthy corpus (3,690 pages) a text cell comes back at
    # most 19 times in a row (a header expanded over its columns), then 6; 32 is 1.5x that, up
    # to a power of two. A loop in a row never ends the row. (Cells of numbers only are
    # `numeric_min_covered`'s.)
    row_cell_min_repeats: int = 32
    # A run of `<`, the filler of machine-readable zones (passports, ID cards, visas), from
    # this length: ICAO 9303 lines are at most 44 characters, so filler, even joined across a
    # line break to the next line's, stays under 2 x 44 = 88; 128 leaves a 40-character
    # margin. Other symbols keep `char_run_min`.
    mrz_fill_run_min: int = 128
    # Loops whose copies differ only in their numbers (counters, timestamps, a table or a
    # section re-emitted with other values) need this many copies and this many letters per
    # copy, so numbered lists ("List item 3") and rows of numbers stay healthy.
    drift_min_repeats: int = 3
    drift_min_letters: int = 16
    # ... except a block at least this long (normalised characters: a heading and a table, a
    # few paragraphs), which counts from `min_repeats` copies: the offline tail rule's two. A
    # page does not re-emit a long section word for word with only its numbers changed; a
    # model that loops on it does, and at that size two copies already cost a lot.
    drift_long_block_chars: int = 128
    # ... and at least one number per this many characters: a long block whose only change is
    # a heading number (`## Section 2` over filler text) is how documents repeat themselves.
    drift_max_chars_per_number: int = 160
    # A line or sentence (not a table row, not a block of lines) coming back with only its
    # numbers changed (`Step 7: ...`, `![Figure 7](figure_7.png)`, `the sixth item`,
    # `--device=/dev/nvidia7`) needs this many copies: healthy lists of figures, references
    # of one series and device lines count on like that. On the issue-39 healthy corpus the
    # most such lines in a row is 20 (a text layer, py-pdf benchmarks), then 15; 32 is 1.5x
    # that, up to a power of two, and the bench's trade-off (docs/detector-evaluation.md)
    # chose it over 16 and 64.
    counter_min_copies: int = 32
    # A single table row coming back with other numbers needs this many copies: real tables
    # have runs of rows that differ only in their numbers (`| Cell 2.0 | Merged Cell 2.1 |`).
    drift_row_min_repeats: int = 6
    # ... unless its copies carry this many letters: real tables change their labels from row
    # to row, so a long row whose words come back word for word with new numbers is a loop
    # after `drift_min_repeats` copies (a lone re-emitted row of 100+ characters, as CJK
    # reports loop, otherwise runs 6 copies: past a 512-token cap on most tokenizers).
    drift_row_wordy_letters: int = 48
    # Letters a text unit must hold to count at all (0 online; the offline tail rule, which
    # accepts two copies, uses it so only a re-emitted sentence or paragraph counts).
    min_unit_letters: int = 0
    # How often (raw characters) the number-insensitive (shape view) check runs: every 32
    # keeps drift loops within 3 periods + 64 characters (3 copies + 32 to confirm).
    drift_check_stride: int = 32
    # Only raw whitespace for this long is a (blank) loop: padded tables are wide.
    blank_run_min: int = 2048
    # Longest period searched, and normalised tail kept in memory (must hold 3+ periods).
    max_period: int = 1024
    tail_window: int = 4096
    # Raw characters between two periodicity checks; bounds the detection latency.
    check_stride: int = 16
    # Candidate periods come from earlier occurrences of the last `anchor_chars` characters.
    anchor_chars: int = 16
    max_candidates: int = 8
    # Line loops (copies may drift in spelling, e.g. `Hakate`/`Hekate`): among the last
    # `line_window` lines with letters, `line_min_repeats` repeat one of the previous
    # `line_history` lines and together hold `line_min_chars` characters.
    line_window: int = 12
    line_min_repeats: int = 9
    line_min_chars: int = 96
    line_history: int = 16
    # A rule line (`===`, `---`, `***`, `───`, three marks or more: separators, nothing to fill
    # in) stacked this many times in a row is a loop whatever its length: a rule separates
    # content, so a document never stacks more than two or three. Blanks to fill (`____`,
    # `....`, empty cells) do stack (forms, lined paper) and are left to `fill_min_covered`.
    rule_line_min_repeats: int = 8
    # A line of one or two marks and nothing else (a lone bullet `•`, a `*`, a closing `}`;
    # not leader dots, which are fill) stacked this many times in a row: on the issue-39
    # healthy corpus (3,690 pages, 7 sources) the most is 37 (`*` difficulty marks in a text
    # layer), then 24; 64 is 1.5x that, up to a power of two. (Such a run was a fill run
    # needing 1,024 copies.)
    lone_mark_min_repeats: int = 64
    # Lines holding one number each that count on by a fixed step (`0.5`, `1`, `1.5`, ...) are a
    # counter loop after this many steps: a page's line numbers, a column of years or an axis
    # count a few dozen, since a page holds 50-80 lines; a model stuck counting runs to the cap.
    counter_min_steps: int = 128
    # Lines longer than this are never compared (a loop of long lines is periodic anyway).
    line_max_chars: int = 256
    # Structural view (`structure`): copies of up to this many lines (or CJK sentences) that
    # come back in step, with other numbers or one changed word ...
    structure_max_lines: int = 8
    # ... where a changed word is allowed in lines of at least this many characters (a third
    # of it for CJK); at the cap, a diagram row of this many characters is a long enough copy.
    fuzzy_min_chars: int = 40
    diagram_min_chars: int = 16
    # A diagram row (box drawing, pipes and spaces inside a code fence), of any width, is a loop
    # after this many copies in step: healthy drawings repeat a row too (the inside of a tall
    # box, the empty rows of a drawn table, a long connector), a handful of times, as tables
    # repeat cells (`table_min_repeats`); a model stuck on one repeats it dozens of times.
    diagram_min_repeats: int = 16

    # Answers in JSON (dots.ocr layout cells, Dharma's keys, any answer that opens as JSON):
    # a second detector also reads the string values of text keys, escapes decoded (`\n` a
    # line break), where a loop's lines are otherwise invisible to the line and structure
    # trackers, and the JSON's own lines (one record per object) are not compared
    # (`json_strings`). JSON_NEVER (0), JSON_ALWAYS (1, set by the JSON profiles), or
    # JSON_WHEN_OPENED (2): when the answer's first characters open a JSON object or array.
    json_strings: int = 2

    def drift_row_repeats(self, letters: int) -> int:
        """Copies a table row coming back with other numbers needs, by the letters it holds."""
        wordy = letters >= self.drift_row_wordy_letters
        return self.drift_min_repeats if wordy else self.drift_row_min_repeats

    def __post_init__(self) -> None:
        if self.tail_window < 4 * self.max_period:
            raise ValueError("tail_window must hold at least four periods of max_period")
        if self.min_repeats < 2 or self.check_stride < 1 or self.anchor_chars < 2:
            raise ValueError("min_repeats >= 2, check_stride >= 1 and anchor_chars >= 2")
        if self.drift_check_stride % self.check_stride or self.structure_max_lines < 1:
            raise ValueError(
                "drift_check_stride must be a multiple of check_stride; structure_max_lines >= 1"
            )


@dataclass(frozen=True, slots=True)
class LoopVerdict:
    """A detected loop. Offsets and lengths are in raw characters of the fed text."""

    kind: LoopKind
    period: int  # length of one copy of the repeating unit
    repeats: float  # copies seen when the loop was detected
    onset: int  # offset where the first copy starts
    covered: int  # characters from the onset to the detection point
    unit: str  # one copy of the repeating unit (raw, truncated to 200 characters)
    drift: bool = False  # copies differ (digits or spelling), not an exact repeat
    # ... by a word besides numbers (the line and structure trackers' near-copy rule); grounding
    # counts such copies on the page by that rule (`near_copies`)
    near: bool = False
