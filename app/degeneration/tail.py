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

from app.degeneration.charclass import DELETED_CHARS, EXACT_TABLE, FILL_CHARS
from app.degeneration.config import DetectorConfig, LoopVerdict
from app.degeneration.periodic_loops import find_drift_loop, find_exact_loop
from app.degeneration.raw_offsets import periodic_verdict

TAIL_CONFIG = DetectorConfig(
    min_repeats=2,
    confirm_chars=0,
    min_covered_chars=64,
    min_unit_letters=32,
    drift_min_repeats=3,
    drift_min_letters=24,
    max_period=2048,
    tail_window=8192,
)
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
        loop = find_exact_loop(exact, config) or find_drift_loop(exact, config)
        if loop is None:
            continue
        verdict = periodic_verdict(raw, len(candidate) - len(raw), loop)
        if verdict.drift or verdict.repeats >= _WHOLE_UNIT_MIN_REPEATS:
            return verdict
        if not starts_at_line_start(candidate, verdict.onset):
            return verdict
    return None


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
