"""The words a page's invisible layer holds: its kept text without Markdown, in the kept
text's reading order, cut where a reader would cut it (at spaces; between the characters of a
script written without spaces, CJK, which Tesseract also reads character by character)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from app.textlayer.plain import plain_text

_FRONT_MATTER = re.compile(r"\A---\n.*?\n---[ \t]*(\n|\Z)", re.DOTALL)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*+]\s+|>\s?)+")
_EMPHASIS = re.compile(r"(?<!\w)(\*{1,3}|_{1,3}|~~|`+)(?=\S)|(?<=\S)(\*{1,3}|_{1,3}|~~|`+)(?!\w)")
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$")
_ENTITIES = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&nbsp;": " "}


@dataclass(frozen=True)
class Token:
    """One word of the layer; `joined`: no space between it and the word before it."""

    text: str
    joined: bool = False


def layer_text(markdown: str) -> str:
    """The kept text as a reader of the page sees it: no front matter, no Markdown or HTML
    markup, tables as their cells' words, headings and lists as their words."""
    text = _FRONT_MATTER.sub("", markdown.replace("\r\n", "\n"))
    text = _COMMENT.sub(" ", text)
    text = _IMAGE.sub(" ", text)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    for entity, char in _ENTITIES.items():
        text = text.replace(entity, char)
    lines = []
    for line in plain_text(text).splitlines():
        if _RULE.match(line):
            continue
        line = _EMPHASIS.sub("", _BULLET.sub("", line))
        lines.append(line)
    return "\n".join(lines).strip()


def is_unspaced(char: str) -> bool:
    """A character of a script written without spaces between words (Han, kana, CJK
    punctuation and full-width forms): each is a word of its own for placing."""
    code = ord(char)
    return (
        0x2E80 <= code <= 0x303F  # CJK radicals, ideographic punctuation
        or 0x3040 <= code <= 0x31FF  # kana, bopomofo
        or 0x3400 <= code <= 0x9FFF  # CJK ideographs (and extension A)
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFF60  # full-width forms
        or 0x20000 <= code <= 0x3FFFF
    )


def _printable(char: str) -> bool:
    return unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Co", "Cn") or char == "\u200d"


def split_unspaced(word: str) -> list[str]:
    """`word` cut before and after each unspaced character; a combining mark stays with the
    character it follows."""
    parts: list[str] = []
    for char in word:
        mark = unicodedata.combining(char) > 0 or unicodedata.category(char) == "Mn"
        if parts and (mark or not (is_unspaced(char) or is_unspaced(parts[-1][-1]))):
            parts[-1] += char
        else:
            parts.append(char)
    return parts


def tokens(text: str) -> list[Token]:
    """The layer's words in order: whitespace cuts, and unspaced characters stand alone."""
    found: list[Token] = []
    for chunk in text.split():
        kept = "".join(c for c in chunk if _printable(c))
        for index, part in enumerate(split_unspaced(kept)):
            found.append(Token(part, joined=index > 0))
    return found


def matching_key(word: str) -> str:
    """How two readings of a word are compared: compatibility-normalised, case-folded, letters,
    digits and marks only (a reader's quotes and dashes differ more than its words)."""
    folded = unicodedata.normalize("NFKC", word).casefold()
    kept = "".join(c for c in folded if unicodedata.category(c)[0] in "LNM")
    return kept or folded
