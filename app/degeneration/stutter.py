"""Word stutter: every word emitted several times in a row (`the the the answer answer ...`).

This shape is not one long periodic loop - the repeated word changes every few tokens - so
the periodicity detectors miss it. It is measured over word tokens: a word "stutters" when it
comes three or more times back to back (`is is is`) or is itself three or more copies of a
shorter string (`TheTheThe`, `IIII`). In scripts written without spaces (Chinese, Japanese) a
word is a run of one to four characters coming three or more times back to back (`東京東京東京`):
their natural doubling (`人人`, `常常`, `時々`) is two copies, never three. Natural text stutters
once in a while (`ha ha ha`, `very very very`, `哈哈哈`), so a stutter is declared only when many
different words stutter close together.
"""

import re
from dataclasses import dataclass

from app.degeneration.tokens import Token, is_no_space_script, tokenize

_SELF_REPEATING_RE = re.compile(r"(.+?)\1{2,}")
_MIN_RUN = 3
_MIN_WORDS = 5  # different words that must stutter close together
# Online pre-tests on one completed line, cheapest first: 80+ characters (five words each said
# three times fill that; most sentences are shorter, so most lines cost one `len`), 12+ words
# of which at most half are distinct, and one word three times back to back. Only lines that
# pass all three are tokenized.
_LINE_MIN_CHARS = 80
_LINE_MIN_WORDS = 12
_THRICE_RE = re.compile(r"\b([^\W\d_]+)\s+\1\s+\1\b")
# The same pre-test for scripts without spaces: a word of one to four characters thrice.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_CJK_THRICE_RE = re.compile(f"([{_CJK}]{{1,4}})\\1\\1")
_CJK_CHAR_RE = re.compile(f"[{_CJK}]")
_CJK_LINE_MIN_CHARS = 30  # five words of two characters, each said three times
# ... and online, sentences up to this long: the search costs about a microsecond a character,
# and a paragraph with no full stop is left to the offline check (`find_stutter`).
_CJK_LINE_MAX_CHARS = 256
_CJK_MAX_WORD = 4


@dataclass(frozen=True, slots=True)
class Stutter:
    onset: int  # raw offset of the first stuttering word in the densest window
    end: int
    words: int  # distinct stuttering words in that window
    period: int  # median raw length of one stuttered copy


def find_stutter(text: str, window_tokens: int = 40, min_words: int = _MIN_WORDS) -> Stutter | None:
    """The densest window of `window_tokens` tokens if `min_words` distinct words stutter."""
    events = _stutter_events(tokenize(text, keep_fill=True))
    best: Stutter | None = None
    start = 0
    for end in range(len(events)):
        while events[end][0] - events[start][0] >= window_tokens:
            start += 1
        words = {event[1] for event in events[start : end + 1]}
        if len(words) >= min_words and (best is None or len(words) > best.words):
            copies = sorted(event[3] - event[2] for event in events[start : end + 1])
            best = Stutter(
                onset=events[start][2],
                end=events[end][3],
                words=len(words),
                period=copies[len(copies) // 2],
            )
    return best


def stutter_in_line(line: str) -> Stutter | None:
    """Online: the stutter in one completed line or sentence, if many words stutter in it."""
    size = len(line)
    if size < _CJK_LINE_MIN_CHARS:
        return None
    if size <= _CJK_LINE_MAX_CHARS and not line.isascii() and _may_stutter_without_spaces(line):
        return find_stutter(line)
    if size < _LINE_MIN_CHARS:
        return None
    words = line.split()
    if len(words) < _LINE_MIN_WORDS or 2 * len(set(words)) > len(words):
        return None
    if _THRICE_RE.search(line) is None:
        return None
    return find_stutter(line)


def _may_stutter_without_spaces(line: str) -> bool:
    """Cheapest first: a CJK line that stutters repeats its characters (few distinct ones);
    then a C-level search must find as many different words said thrice as `find_stutter`
    needs (a line of laughter or one doubled word is not a stutter)."""
    if 5 * len(set(line)) > 3 * len(line):
        return False
    thrice = set(_CJK_THRICE_RE.findall(line))
    return len(thrice) >= _MIN_WORDS and is_no_space_script(line)


def _stutter_events(tokens: list[Token]) -> list[tuple[int, str, int, int]]:
    """(word position, word, raw start, raw end of one copy) for each stuttering word. A
    stuttered CJK word advances the position once per copy, as a stuttered Latin word does."""
    events: list[tuple[int, str, int, int]] = []
    index = position = 0
    while index < len(tokens):
        token = tokens[index]
        size, copies = _cjk_word_stutter(tokens, index)
        if copies:
            word = "".join(t.text for t in tokens[index : index + size])
            events.append((position, word, token.start, tokens[index + size - 1].end))
            index += size * copies
            position += copies
            continue
        run_end = index + 1
        while run_end < len(tokens) and tokens[run_end].text == token.text:
            run_end += 1
        if token.text.isalpha():
            if run_end - index >= _MIN_RUN:
                events.append((position, token.text, token.start, token.end))
            else:
                match = _SELF_REPEATING_RE.fullmatch(token.text)
                if match is not None:
                    unit_end = token.start + len(match.group(1))
                    events.append((position, match.group(1), token.start, unit_end))
        position += run_end - index
        index = run_end
    return events


def _cjk_word_stutter(tokens: list[Token], index: int) -> tuple[int, int]:
    """(characters per word, copies) of a CJK word of 2-4 characters said 3+ times from
    `index`; (0, 0) when none (a single character's run is an ordinary token run)."""
    if not _CJK_CHAR_RE.match(tokens[index].text):
        return 0, 0
    texts = [t.text for t in tokens[index : index + 3 * _CJK_MAX_WORD]]
    for size in range(2, _CJK_MAX_WORD + 1):
        word = texts[:size]
        if (
            len(texts) < 3 * size
            or texts[size : 2 * size] != word
            or texts[2 * size : 3 * size] != word
        ):
            continue
        if not all(_CJK_CHAR_RE.match(text) for text in word):
            return 0, 0
        copies = 3
        while [t.text for t in tokens[index + copies * size : index + (copies + 1) * size]] == word:
            copies += 1
        return size, copies
    return 0, 0
