"""A clause said three times back to back inside a sentence: `the board approved the plan,
the board approved the plan, the board approved the plan, and ...`.

Three copies are too few for the online detector (it waits for a fourth to start) and the text
need not end in them, so this is an offline test over the whole output, on word tokens. What
counts as a clause, and why healthy text does not hold three copies of one:
- four or more distinct words and `min_letters` letters (a third of that in scripts written
  without spaces), so emphasis (`very very very`, `location, location, location`) and
  laughter stay healthy;
- no sentence end inside the copies: documents repeat whole sentences and paragraphs
  (filler text, boilerplate, refrains), a model that loops jumps back in the middle of one;
- no line break and no cell separator (`|`, `&`, tab) inside the copies: table rows and
  columns repeat their cells, lists and verses repeat their lines.
"""

from dataclasses import dataclass

from app.degeneration.tokens import Token, tokenize

_CLOSERS = frozenset(".!?。！？;；")
_SEPARATORS = ("\n", "\\n", "|", "&", "\t")
_MIN_WORDS = 4
_MAX_TOKENS = 40  # a clause, not a paragraph (those repeat whole in healthy pages)
_COPIES = 3


@dataclass(frozen=True, slots=True)
class ClauseRepeat:
    onset: int  # raw offset of the first copy
    end: int  # raw end of the third copy
    period: int  # raw characters per copy


def find_clause_repeat(text: str, min_letters: int = 20) -> ClauseRepeat | None:
    """The first clause said three times back to back, if any."""
    tokens = tokenize(text, keep_fill=True)
    ids = _ids(tokens)
    for size in range(_MIN_WORDS, min(_MAX_TOKENS, len(ids) // _COPIES) + 1):
        start = _run_start(ids, size)
        while start is not None:
            found = _clause_at(text, tokens, start, size, min_letters)
            if found is not None:
                return found
            # Every rotation of a rejected clause is rejected alike: skip its copies.
            start = _run_start(ids, size, start + _COPIES * size)
    return None


def _ids(tokens: list[Token]) -> list[int]:
    vocabulary: dict[str, int] = {}
    return [vocabulary.setdefault(token.text, len(vocabulary)) for token in tokens]


def _run_start(ids: list[int], size: int, after: int = 0) -> int | None:
    """The first index from `after` where `_COPIES` copies of `size` tokens follow (the last
    copy may lack its final token: the separator, `and`, that a next copy would need)."""
    need = (_COPIES - 1) * size - 1
    run = 0
    for index in range(after, len(ids) - size):
        run = run + 1 if ids[index] == ids[index + size] else 0
        if run >= need:
            return index - need + 1
    return None


def _clause_at(
    text: str, tokens: list[Token], start: int, size: int, min_letters: int
) -> ClauseRepeat | None:
    unit = tokens[start : start + size]
    words = [t.text for t in unit if t.text[:1].isalpha()]
    if len(set(words)) < _MIN_WORDS or any(t.text in _CLOSERS for t in unit):
        return None
    onset, end = unit[0].start, tokens[start + _COPIES * size - 2].end
    region = text[onset:end]
    if any(separator in region for separator in _SEPARATORS):
        return None
    letters = sum(len(word) for word in words)
    wide = sum(len(word) for word in words if not word.isascii())
    if letters + 2 * wide < min_letters:  # a CJK character carries about a word's letters
        return None
    return ClauseRepeat(onset=onset, end=end, period=(end - onset) // _COPIES)
