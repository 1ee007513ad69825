"""Score a finished output: is it degenerate, and what do the repetition metrics say?

`score_output` combines four signals; the output is degenerate when any of these holds:

1. the online `LoopDetector`, run over the whole text, found a loop (strict: three copies and
   a bit, with higher bars for units that repeat naturally - fill, numbers, table cells);
2. the text *ends* inside a repetition (`tail.find_tail_loop`: two copies of a sentence that
   was re-emitted from mid-line, or three copies of a unit whose numbers count up), or, when
   the request stopped at the token cap, inside 2+ copies of a long block, however aligned
   (`tail.find_cap_loop`: a chat-template turn, a section, rows that come back in step);
3. many different words stutter close together (`stutter.find_stutter`), or one clause is
   said three times back to back inside a sentence (`clauses.find_clause_repeat`);
4. CREP coverage >= 0.3 *and* the text ends in n-gram repetition (`tail_repetition`), and
   the repeated segment has words: CREP alone flags healthy pages that reuse a paragraph
   (filler text), so it must be backed by repetition where a loop ends up, at the very end
   of the output; numbers alone (a sparse matrix of zeros) are left to the online detector's
   numeric thresholds.

`is_degenerate_dharma` is kept separate: it is the DharmaOCR definition (hit the token cap
and the tail repeats), reported as a field, not used for the decision, because in batch OCR the
finish reason is often unknown and loops cut short by a client are still loops.
"""

from dataclasses import dataclass, field
from typing import Literal

from app.degeneration.charclass import count_letters
from app.degeneration.clauses import find_clause_repeat
from app.degeneration.config import DetectorConfig, LoopKind, LoopVerdict
from app.degeneration.crep import CREP_THRESHOLD, CrepResult, crep_coverage, unique_ngram_rates
from app.degeneration.online import LoopDetector
from app.degeneration.stutter import find_stutter
from app.degeneration.tail import CAP_CONFIG, TAIL_CONFIG, find_cap_loop, find_tail_loop
from app.degeneration.tokens import token_texts

Reason = Literal["online_loop", "tail_loop", "cap_loop", "stutter", "clause_repeat", "crep_tail"]
# The last this many 4-grams must all repeat earlier ones for the tail to count as repeating.
_ENDING_4GRAMS = 8
_SENTENCE_CLOSERS = frozenset(".!?。！？")


@dataclass(frozen=True, slots=True)
class ScoreConfig:
    """Thresholds of the offline decision (the online ones live in `detector`)."""

    detector: DetectorConfig = field(default_factory=DetectorConfig)
    tail: DetectorConfig = TAIL_CONFIG
    cap: DetectorConfig = CAP_CONFIG
    crep_threshold: float = CREP_THRESHOLD
    # The tail repeats when at most this share of its 4-grams are distinct ...
    tail_max_unique_4grams: float = 0.5
    # ... measured over its last this many tokens.
    tail_tokens: int = 200
    stutter_window_tokens: int = 40
    stutter_min_words: int = 5
    excerpt_chars: int = 200


@dataclass(frozen=True, slots=True)
class DharmaVerdict:
    degenerate: bool
    hit_cap: bool | None  # None: finish reason and token counts unknown
    tail_repetition: bool
    basis: Literal["cap_and_tail", "tail_only"]  # tail_only when the cap is unknown


@dataclass(frozen=True, slots=True)
class OutputScore:
    degenerate: bool
    reason: Reason | None
    kind: LoopKind | None
    period: int | None  # raw characters per copy
    onset: int | None  # raw offset where the repetition starts
    repeats: float | None
    coverage: float  # CREP coverage
    crep_degenerate: bool
    dharma_degenerate: bool
    hit_cap: bool | None
    tail_repetition: bool
    tail_unique_4gram_rate: float
    unique_ngram_rates: dict[int, float]
    loop_tail: str  # excerpt of the repetition (or of the text's end when healthy)
    online: LoopVerdict | None
    text_length: int


def tail_unique_4gram_rate(text: str, tail_tokens: int = 200) -> float:
    """Distinct / all 4-grams over the last `tail_tokens` tokens (1.0 when too short)."""
    grams = _tail_4grams(text, tail_tokens)
    return round(len(set(grams)) / len(grams), 4) if grams else 1.0


def tail_repetition(text: str, config: ScoreConfig | None = None) -> bool:
    """Whether the text ends in n-gram repetition.

    Two conditions: few distinct 4-grams among the last `tail_tokens` tokens, and the very
    last 4-grams all seen before in that window - the output ends *inside* the repetition, as
    a loop cut by the token cap does, not in fresh text after some repeated filler.
    """
    config = config or ScoreConfig()
    grams = _tail_4grams(text, config.tail_tokens)
    if not grams or len(set(grams)) / len(grams) > config.tail_max_unique_4grams:
        return False
    # The final 4-gram is left out: an output cut by the cap may end mid-word.
    ending = grams[-_ENDING_4GRAMS - 1 : -1]
    earlier = set(grams[: -_ENDING_4GRAMS - 1])
    return all(gram in earlier for gram in ending)


def _tail_4grams(text: str, tail_tokens: int) -> list[tuple[str, ...]]:
    tail = token_texts(text)[-tail_tokens:]
    return list(zip(tail, tail[1:], tail[2:], tail[3:], strict=False))


def hit_token_cap(
    finish_reason: str | None, completion_tokens: int | None, max_tokens: int | None
) -> bool | None:
    """True/False when known from the finish reason or the token counts, else None."""
    if finish_reason is not None and finish_reason.lower() == "length":
        return True
    if completion_tokens is not None and max_tokens is not None:
        return completion_tokens >= max_tokens
    if finish_reason is not None:
        return False
    return None


def is_degenerate_dharma(
    text: str,
    finish_reason: str | None = None,
    completion_tokens: int | None = None,
    max_tokens: int | None = None,
) -> DharmaVerdict:
    """DharmaOCR: the output hit the token cap and its tail shows n-gram repetition.

    When the cap cannot be known, the tail alone decides and `basis` says so.
    """
    hit_cap = hit_token_cap(finish_reason, completion_tokens, max_tokens)
    repeating = tail_repetition(text)
    return DharmaVerdict(
        degenerate=repeating and hit_cap is not False,
        hit_cap=hit_cap,
        tail_repetition=repeating,
        basis="tail_only" if hit_cap is None else "cap_and_tail",
    )


@dataclass(frozen=True, slots=True)
class _Finding:
    reason: Reason
    kind: LoopKind
    period: int
    onset: int
    repeats: float | None


def score_output(
    text: str,
    finish_reason: str | None = None,
    completion_tokens: int | None = None,
    max_tokens: int | None = None,
    config: ScoreConfig | None = None,
) -> OutputScore:
    """Score one finished output; see the module docstring for the decision rule."""
    config = config or ScoreConfig()
    online = run_online_detector(text, config.detector)
    crep = crep_coverage(text)
    rate = tail_unique_4gram_rate(text, config.tail_tokens)
    repeating = tail_repetition(text, config)
    hit_cap = hit_token_cap(finish_reason, completion_tokens, max_tokens)
    finding = _first_finding(text, online, crep, repeating, config, hit_cap is True)
    return OutputScore(
        degenerate=finding is not None,
        reason=None if finding is None else finding.reason,
        kind=None if finding is None else finding.kind,
        period=None if finding is None else finding.period,
        onset=None if finding is None else finding.onset,
        repeats=None if finding is None else finding.repeats,
        coverage=crep.coverage,
        crep_degenerate=crep.coverage >= config.crep_threshold,
        dharma_degenerate=repeating and hit_cap is not False,
        hit_cap=hit_cap,
        tail_repetition=repeating,
        tail_unique_4gram_rate=rate,
        unique_ngram_rates=unique_ngram_rates(text),
        loop_tail="" if finding is None else _excerpt(text, finding.onset, config),
        online=online,
        text_length=len(text),
    )


def run_online_detector(text: str, config: DetectorConfig | None = None) -> LoopVerdict | None:
    """The online detector's verdict on a complete text (checked at the same offsets as when
    streamed, plus once at the very end)."""
    detector = LoopDetector(config)
    detector.feed(text)
    return detector.finish()


def _first_finding(
    text: str,
    online: LoopVerdict | None,
    crep: CrepResult,
    repeating: bool,
    config: ScoreConfig,
    hit_cap: bool,
) -> _Finding | None:
    if online is not None:
        return _finding_from_verdict("online_loop", online)
    tail_loop = find_tail_loop(text, config.tail)
    if tail_loop is not None:
        return _finding_from_verdict("tail_loop", tail_loop)
    cap_loop = find_cap_loop(text, config.cap) if hit_cap else None
    if cap_loop is not None:
        return _finding_from_verdict("cap_loop", cap_loop)
    stutter = find_stutter(text, config.stutter_window_tokens, config.stutter_min_words)
    if stutter is not None:
        return _Finding("stutter", "phrase", stutter.period, stutter.onset, None)
    clause = find_clause_repeat(text)
    if clause is not None:
        return _Finding("clause_repeat", "phrase", clause.period, clause.onset, 3.0)
    # Filler text and boilerplate repeat whole sentences and end with one; a loop is cut
    # wherever the cap falls. So an output that ends a sentence needs the cap to count.
    cut = hit_cap or not ends_a_sentence(text)
    if crep.coverage >= config.crep_threshold and repeating and cut and count_letters(crep.segment):
        return _Finding("crep_tail", _crep_kind(crep), crep.segment_chars, crep.onset, None)
    return None


def ends_a_sentence(text: str) -> bool:
    """Whether the text's last visible character closes a sentence."""
    return text.rstrip()[-1:] in _SENTENCE_CLOSERS


def _finding_from_verdict(reason: Reason, verdict: LoopVerdict) -> _Finding:
    return _Finding(reason, verdict.kind, verdict.period, verdict.onset, verdict.repeats)


def _crep_kind(crep: CrepResult) -> LoopKind:
    breaks = crep.segment.count("\n") + crep.segment.count("\\n")
    if crep.segment_tokens == 1:
        return "char_run"
    return "phrase" if breaks == 0 else "line" if breaks == 1 else "block"


def _excerpt(text: str, onset: int, config: ScoreConfig) -> str:
    return text[onset : onset + config.excerpt_chars]
