"""Lines into paragraphs: joined with spaces, words hyphenated at line ends made whole."""

from __future__ import annotations

from collections.abc import Iterable

from app.textlayer.words import is_word

_HYPHENS = ("-", "\u00ad", "\u2010")


def join_lines(lines: Iterable[str]) -> str:
    """One paragraph from its lines; "Col-" + "lege" becomes "College" when that is a word."""
    text = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not text:
            text = line
        elif text.endswith(_HYPHENS) and _rejoins(text, line):
            text = text[:-1] + line
        elif text.endswith("-") and text[-2:-1].isalpha() and line[:1].islower():
            text += line  # a compound split at its hyphen: "five-" + "shift"
        else:
            text = f"{text} {line}"
    return text


def _rejoins(text: str, line: str) -> bool:
    """Whether a hyphen at a line end only split a word (it is kept in "five-fold")."""
    if text.endswith("\u00ad"):
        return True
    head = text[:-1].rsplit(maxsplit=1)[-1] if text[:-1].strip() else ""
    tail = line.split(maxsplit=1)[0]
    if not (head[-1:].isalpha() and tail[:1].islower()):
        return False
    whole = (head.rsplit("-", 1)[-1] + tail).strip(".,;:!?)]}\"'")
    return is_word(whole) or not is_word(tail.strip(".,;:!?)]}\"'"))
