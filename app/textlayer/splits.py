"""Words a broken font cut apart, lost a glyph of, glued together or spelled out letter by letter.

A font whose ToUnicode map lacks a glyph drops that letter everywhere (`Spee h`, `Abstra t`,
`denition`), one that maps a ligature to the wrong character substitutes it (`Educa&on`,
`operaOons`), one that draws ligatures as separate glyphs leaves a gap after them (`Platf orm`),
one with no space glyph runs the words together (`theriverrose`), and a layer placed glyph by
glyph may space every letter (`S p e e c h`). Each makes words a word list does not know, but
so do names, terms and formulas: what marks a broken layer is that the unknown pieces *repair*
into known words, many times on one page:

- a fragment and its neighbour join into a word, directly or with a letter or ligature in
  the gap or in place of the symbol between them;
- an unknown word becomes a known one with one letter or ligature put in or swapped in;
- a run of single letters joins into a word;
- an unknown long token is three or more known words glued, one of them a function word.

Healthy text rarely repairs: two known words are never joined (`can not`), hyphenation keeps
its hyphen, a formula's single letters join into no word, and a name or a term seldom turns
into a known word with one letter changed; the gate needs many repairs on a page.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from string import ascii_lowercase

from app.textlayer.words import is_word

_TOKEN = re.compile(r"[^\W\d_]+")
_SAMPLE = 600  # tokens looked at per page: a verdict, at bounded cost
# What a broken glyph stands for: a letter, or one of the ligatures fonts draw as one glyph.
_FILLERS = (*ascii_lowercase, "fi", "fl", "ff", "ffi", "ffl", "ti", "tf", "ft", "th")
_MIN_JOINED = 4  # a repaired word has at least this many letters (short ones repair by chance)
_RUN_MIN_LETTERS = 4  # spelled-out runs of at least this many single letters
_GLUED_MIN = 10  # unknown tokens at least this long are tried as glued words
_FUNCTION_WORDS = frozenset(
    {"the", "of", "and", "to", "in", "is", "for", "on", "with", "by", "as", "at", "from"}
    | {"that", "this", "are", "was", "be", "or", "an", "it", "its", "not"}
    | {"der", "die", "das", "und", "von", "mit", "les", "des", "et", "le", "la", "el", "que"}
)

Token = tuple[str, int, int]  # text, start, end


@dataclass(frozen=True, slots=True)
class SplitReport:
    tokens: int  # alphabetic tokens looked at
    joined: int  # pieces one space apart that join into a word as they are
    mended: int  # pieces or words that the page's most frequent glyph repair makes known
    repair: str  # that repair: `+c` (a glyph dropped), `o>ti` (a glyph read as another)
    repair_seen: int  # times the glyph that repair puts in occurs in the text as it is
    spelled: int  # single-letter runs that join into a word
    glued: int  # unknown long tokens made of known words

    @property
    def misspaced(self) -> int:
        """Words cut by a gap, spelled out or glued: what a layer's spacing broke."""
        return self.joined + self.spelled + self.glued

    @property
    def glyph_missing(self) -> bool:
        """Whether the page needs its most frequent repair's glyph more often than it shows
        it: a letter or ligature its font cannot give (healthy pages show the letters they
        would need: a name one letter off a word is off by a letter the page has plenty of)."""
        return self.mended > self.repair_seen


def split_report(text: str, languages: tuple[str, ...]) -> SplitReport:
    """Count the repairs that would make `text`'s unknown pieces into known words.

    A glyph repair (a letter or ligature put in, or swapped for another character) counts only
    for the one the page needs most often: a broken font breaks the same glyph everywhere,
    while a name or a term that is one letter off a known word is off by a different one."""
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)][:_SAMPLE]
    counts = {"joined": 0, "spelled": 0, "glued": 0}
    repairs: list[set[str]] = []
    index = 0
    while index < len(tokens):
        kind, keys, used = _judge(text, tokens, index, languages)
        if kind:
            counts[kind] += 1
        elif keys:
            repairs.append(keys)
        index += used
    tally = Counter(key for keys in repairs for key in keys)
    repair, mended = tally.most_common(1)[0] if tally else ("", 0)
    glyph = repair[repair.find(">") + 1 :] if ">" in repair else repair[1:]
    seen = text.casefold().count(glyph) if glyph else 0
    return SplitReport(len(tokens), mended=mended, repair=repair, repair_seen=seen, **counts)


def _judge(
    text: str, tokens: list[Token], index: int, languages: tuple[str, ...]
) -> tuple[str, set[str], int]:
    """The repair found at `index`: its kind, or the glyph repairs that would do; the tokens
    it takes."""
    run = _single_letter_run(text, tokens, index)
    if run >= _RUN_MIN_LETTERS:
        word = "".join(t[0] for t in tokens[index : index + run])
        return ("spelled" if is_word(word, languages) else ""), set(), run
    token = tokens[index][0]
    if index + 1 < len(tokens):
        gap = text[tokens[index][2] : tokens[index + 1][1]]
        kind, keys = _repair_pair(token, tokens[index + 1][0], gap, languages)
        if kind or keys:
            return kind, keys, 2
    if len(token) < 3 or is_word(token, languages):
        return "", set(), 1
    if len(token) >= _GLUED_MIN and _splits_into_words(token.casefold(), languages):
        return "glued", set(), 1
    return "", _mends(token.casefold(), languages), 1


def _repair_pair(
    first: str, second: str, gap: str, languages: tuple[str, ...]
) -> tuple[str, set[str]]:
    """Whether two pieces, one space or one symbol apart, are one word cut by a bad glyph:
    "joined" when they join as they are, else the glyph repairs that join them.

    Joined as they are, the longer piece must be an unknown fragment of three letters or more
    (`Platf orm`); with a glyph put in, the word made must be five letters or more and the
    pieces not two known words of three or more (`Spee h`, `Se tion`). A formula's single
    letters (`s is`) repair by chance, each with another glyph: only the page's most frequent
    glyph repair counts (`split_report`)."""
    if not (gap == " " or (len(gap) == 1 and not gap.isspace() and gap not in "-'’")):
        return "", set()
    head, tail = first.casefold(), second.casefold()
    known = [len(piece) >= 3 and is_word(piece, languages) for piece in (head, tail)]
    if all(known):
        return "", set()
    longer = max(head, tail, key=len)
    joined = head + tail
    fragment = len(longer) >= 3 and not is_word(longer, languages)
    if gap == " " and fragment and len(joined) >= _MIN_JOINED and is_word(joined, languages):
        return "joined", set()
    if len(joined) < _MIN_JOINED - 1:  # with the glyph put in, `t e` is `the`
        return "", set()
    removed = "" if gap == " " else gap.casefold()
    keys = {
        f"{removed}>{filler}" if removed else f"+{filler}"
        for filler in _FILLERS
        if is_word(head + filler + tail, languages)
    }
    return "", keys


def _mends(word: str, languages: tuple[str, ...]) -> set[str]:
    """The glyph repairs, one letter or ligature put in (`denition`) or swapped in
    (`operaoons`), that make an unknown word of four letters or more a known one."""
    keys: set[str] = set()
    if len(word) < _MIN_JOINED:
        return keys
    for cut in range(1, len(word)):
        head, tail = word[:cut], word[cut:]
        for filler in _FILLERS:
            if is_word(head + filler + tail, languages):
                keys.add(f"+{filler}")
            if is_word(head + filler + tail[1:], languages):
                keys.add(f"{tail[0]}>{filler}")
    return keys


def _single_letter_run(text: str, tokens: list[Token], index: int) -> int:
    run = 0
    while index + run < len(tokens) and len(tokens[index + run][0]) == 1:
        if run and text[tokens[index + run - 1][2] : tokens[index + run][1]] != " ":
            break
        run += 1
    return run


def _splits_into_words(token: str, languages: tuple[str, ...]) -> bool:
    """Whether `token` is three or more known words glued, one of them a function word
    (`theriverrose`, `compositionofthe`): compounds (`Fundamentalgruppe`, `hummingbird`) and
    terms glue two content words and no function word."""
    pieces = _segment(token, languages)
    return pieces is not None and len(pieces) >= 3 and any(p in _FUNCTION_WORDS for p in pieces)


def _segment(token: str, languages: tuple[str, ...]) -> list[str] | None:
    """The split of `token` into the fewest known words of 2+ letters, if any."""
    best: list[list[str] | None] = [[]] + [None] * len(token)
    for end in range(2, len(token) + 1):
        for start in range(max(0, end - 20), end - 1):
            before = best[start]
            if before is None or not is_word(token[start:end], languages):
                continue
            current = best[end]
            if current is None or len(before) + 1 < len(current):
                best[end] = [*before, token[start:end]]
    return best[-1]
