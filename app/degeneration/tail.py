"""Offline test of how a finished output *ends*: does it end inside a repetition?

The online detector needs three copies (plus a bit) before it stops a generation. A finished
output may end after fewer: a sentence re-emitted once, a paragraph loop cut by the token cap
after two and a half copies, a subtitle cycle with counting timestamps. When the text *ends*
inside the repetition, fewer copies are convincing, provided each copy is a real sentence
(`TAIL_CONFIG.min_unit_letters` letters). Healthy pages do repeat whole paragraphs (filler
text, boilerplate), even at their very end, so an exact repeat of fewer than three copies
counts only when its first copy starts in the middle of a line: the model jumped back and
re-emitted recent text. The price: a whole paragraph emitted exactly twice at the end is not
flagged (the online detector flags it from the third copy on).
"""

from app.degeneration.charclass import DELETED_CHARS, EXACT_TABLE, FILL_CHARS, shape_view
from app.degeneration.config import DetectorConfig, LoopVerdict
from app.degeneration.lines import LineLoop
from app.degeneration.periodic_loops import PeriodicLoop, find_exact_loop, find_shape_loop
from app.degeneration.raw_offsets import periodic_verdict
from app.degeneration.structure import StructureTracker

TAIL_CONFIG = DetectorConfig(
    min_repeats=2,
    confirm_chars=0,
    min_covered_chars=64,
    min_unit_letters=32,
    drift_min_repeats=3,
    drift_min_letters=24,
    counter_min_copies=3,  # a text that ends counting in sentences (`min_unit_letters`)
    max_period=2048,
    tail_window=8192,
)
# At the token cap (`finish_reason == "length"`) the stream was cut, not finished: two copies
# of a long block (a chat-template turn, a section, a diagram row) in the tail are enough,
# wherever the first copy starts.
CAP_CONFIG = DetectorConfig(
    min_repeats=2,
    confirm_chars=0,
    min_covered_chars=128,
    min_unit_letters=16,
    drift_min_repeats=2,
    drift_min_letters=16,
    counter_min_copies=2,
    diagram_min_repeats=2,
    max_period=4096,
    tail_window=16384,
)
# Raw characters a copy of whole lines must hold at the cap (a long sentence, a diagram row,
# a section; with `min_unit_letters` words in it unless it is a diagram row).
CAP_MIN_PERIOD = 32
# A duplicate made of whole lines/paragraphs is how documents repeat themselves (filler text,
# boilerplate); a model that jumps back re-emits from mid-line. So with fewer copies than
# this, the first copy must start inside a line.
_WHOLE_UNIT_MIN_REPEATS = 3
_ALIGN_SLACK = 8
# Trailing characters ignored by the second attempt: elisions (`...`) and closing markup.
_TRAILING_JUNK = "".join(sorted(FILL_CHARS)) + DELETED_CHARS


def find_tail_loop(text: str, config: DetectorConfig = TAIL_CONFIG) -> LoopVerdict | None:
    """The repetition the text ends in, judged with the relaxed `config`."""
    for candidate in (text, text.rstrip(_TRAILING_JUNK)):
        raw = candidate[-4 * config.tail_window :]
        exact = raw.translate(EXACT_TABLE)[-config.tail_window :]
        loop = _periodic_tail(exact, config)
        if loop is None:
            continue
        verdict = periodic_verdict(raw, len(candidate) - len(raw), loop)
        if verdict.drift or verdict.repeats >= _WHOLE_UNIT_MIN_REPEATS:
            return verdict
        if not starts_at_line_start(candidate, verdict.onset):
            return verdict
    return None


def find_cap_loop(text: str, config: DetectorConfig = CAP_CONFIG) -> LoopVerdict | None:
    """The repetition a text cut at the token cap ends in: 2+ copies of a long block."""
    candidate = text.rstrip(_TRAILING_JUNK)
    raw = candidate[-4 * config.tail_window :]
    exact = raw.translate(EXACT_TABLE)[-config.tail_window :]
    loop = _periodic_tail(exact, config)
    if loop is not None:
        return periodic_verdict(raw, len(candidate) - len(raw), loop)
    # Lines are judged on the text as it is: a diagram row is made of the fill stripped above.
    raw = text[-4 * config.tail_window :]
    base = len(text) - len(raw)
    tracker = StructureTracker(config, min_repeats=config.min_repeats)
    tracker.feed_all(raw, base)
    line_loop = tracker.ends_in_loop(raw, base, CAP_MIN_PERIOD)
    return None if line_loop is None else _line_verdict(line_loop)


def _periodic_tail(exact: str, config: DetectorConfig) -> PeriodicLoop | None:
    return find_exact_loop(exact, config) or find_shape_loop(shape_view(exact), config)


def _line_verdict(loop: LineLoop) -> LoopVerdict:
    covered = loop.end - loop.onset
    return LoopVerdict(
        kind="line" if loop.distinct_lines == 1 else "block",
        period=loop.period,
        repeats=round(covered / max(1, loop.period), 2),
        onset=loop.onset,
        covered=covered,
        unit=loop.unit[:200],
        drift=loop.drift,
        near=loop.near,
    )


def starts_at_line_start(text: str, offset: int) -> bool:
    """Whether `offset` is a line start, give or take a few visible characters.

    The maximal periodic run may begin a few characters before the line start when the text
    before both copies happens to end alike (`amet.` / `volutpat.`), hence the allowance.
    """
    line_start = max(text.rfind("\n", 0, offset) + 1, text.rfind("\\n", 0, offset) + 2, 0)
    if len(text[line_start:offset].translate(EXACT_TABLE)) <= _ALIGN_SLACK:
        return True
    breaks = [index for index in (text.find("\n", offset), text.find("\\n", offset)) if index >= 0]
    if not breaks:
        return False
    return len(text[offset : min(breaks)].translate(EXACT_TABLE)) <= _ALIGN_SLACK
