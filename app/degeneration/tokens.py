"""Tokenizer-agnostic tokens for the offline repetition metrics.

Tokens are maximal runs of word characters; every other visible character is a token of its
own; characters of scripts written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar) are
one token each, so Chinese or Japanese text gets character-level n-grams. Tokens made only of
punctuation that doubles as layout (leader dots, rules, `___` blanks, table bars, separators
such as commas and quotes; see `charclass.FILL_CHARS`) are dropped: a table of contents is not
"repetitive" in the sense the metrics capture, and a loop of fill is caught by the online
detector. Tokens are case-folded.
"""

import re
from dataclasses import dataclass

from app.degeneration.charclass import FILL_CHARS

_NO_SPACE_SCRIPTS = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
)
_TOKEN_RE = re.compile(rf"[{_NO_SPACE_SCRIPTS}]|[^\W{_NO_SPACE_SCRIPTS}]+|[^\w\s]")
_NO_SPACE_RE = re.compile(rf"[{_NO_SPACE_SCRIPTS}]")
_FILL = "".join(sorted(FILL_CHARS))


@dataclass(frozen=True, slots=True)
class Token:
    text: str  # case-folded
    start: int  # raw offset
    end: int


def tokenize(text: str, keep_fill: bool = False) -> list[Token]:
    """Split `text` into case-folded tokens with their raw offsets.

    Layout fill is dropped unless `keep_fill`, which callers use when a separator must keep
    its neighbours apart (`| Total | Total |` is two cells, not a stutter).
    """
    return [
        Token(match.group().casefold(), match.start(), match.end())
        for match in _TOKEN_RE.finditer(text)
        if keep_fill or match.group().strip(_FILL)
    ]


def token_texts(text: str) -> list[str]:
    return [token.text for token in tokenize(text)]


def is_no_space_script(text: str) -> bool:
    """Whether most letters of `text` belong to scripts written without spaces."""
    letters = sum(1 for ch in text if ch.isalpha())
    return letters > 0 and len(_NO_SPACE_RE.findall(text)) * 2 > letters
