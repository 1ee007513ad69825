"""Character normalisation and classification of repeating units.

The detectors compare text after a cheap normalisation done with ``str.translate`` (C speed):
whitespace and invisible characters are deleted, so a loop that re-wraps its lines, pads table
cells differently or escapes its newlines is still periodic; ASCII letters are lower-cased.

A repeating unit is then classified, because how much repetition is natural depends on what
repeats: leader dots, rules and empty table cells repeat a lot in healthy documents, numbers
repeat in tables, while a line of words repeated three times is already suspicious.
"""

import re
from enum import Enum
from functools import lru_cache

# Characters that documents use to draw leaders, rules, blanks and separators. A unit made only
# of these (plus markup tags) is "fill": TOC leader dots, `____` form blanks, `| --- |`
# separators, empty `<td></td>` cells. U+FFFD is here too: mojibake yields long natural runs.
_FILL_ASCII = ".,;:-_=~*+#|/\\`'\"^"
_FILL_OTHER = (
    "·•‧∙…⋯‥⁃‐‑‒–—―−"  # dots and dashes
    "＿・．。、ー－＝～，；：｜"  # full-width and CJK leaders
    "■□▪▫●○◆◇◦☐☑☒✓✔"  # checkboxes and bullets
    "¯‾⎯⏤﹉﹊﹍﹎﹏⋅∗"  # rules and marks drawn with symbols
    "\ufffd"
)
_BOX_DRAWING = "".join(chr(c) for c in range(0x2500, 0x25A0))
FILL_CHARS = frozenset(_FILL_ASCII + _FILL_OTHER + _BOX_DRAWING)

# Zero-width characters are invisible in rendered text, so they are dropped like whitespace.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_WHITESPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
DELETED_CHARS = _WHITESPACE + _INVISIBLE

_DIGITS = "0123456789" + "٠١٢٣٤٥٦٧٨٩" + "۰۱۲۳۴۵۶۷۸۹" + "０１２３４５６７８９"


def _build_exact_table() -> dict[int, int | None]:
    table: dict[int, int | None] = {ord(ch): None for ch in DELETED_CHARS}
    for upper in range(ord("A"), ord("Z") + 1):
        table[upper] = upper + 32
    return table


# Deletes whitespace/invisibles and lower-cases ASCII: the "exact" view of the text.
EXACT_TABLE = _build_exact_table()
# The same for ASCII text as byte tables: `bytes.translate` is a C table lookup, where
# `str.translate` looks every character up in a dict (about three times slower on the hot path).
_ASCII_LOWER = bytes.maketrans(bytes(range(65, 91)), bytes(range(97, 123)))
_ASCII_DELETED = "".join(ch for ch in DELETED_CHARS if ch.isascii()).encode("ascii")
_ASCII_DIGITS_TO_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
# Maps every digit to "0" (kept for callers that need equal lengths).
SHAPE_TABLE: dict[int, int | None] = {ord(d): ord("0") for d in _DIGITS}
# A run of digits (or of CJK numerals: `第三次`, `十二`) becomes one "0" in the *shape* view, in
# which repeats that differ only in their numbers (counters, timestamps, table values of any
# width) become identical.
_NUMERALS = "〇一二三四五六七八九十百千万"
_SHAPE_DIGIT_TABLE: dict[int, int | None] = {ord(ch): ord("0") for ch in _DIGITS + _NUMERALS}
_ZERO_RUN_RE = re.compile("00+")
# The exact and shape views in one pass, minus Markdown emphasis (`**Total**` is `Total`):
# the key of a line in the structural view (runs of `0` still to collapse).
LINE_KEY_TABLE: dict[int, int | None] = {
    **EXACT_TABLE,
    **_SHAPE_DIGIT_TABLE,
    **{ord(ch): None for ch in "*_#>`"},
}


def _ascii_byte_tables(table: dict[int, int | None]) -> tuple[bytes, bytes]:
    """`table` on ASCII text as `bytes.translate` arguments (it maps ASCII to ASCII). A dict
    table raises and catches a KeyError per distinct unmapped character of every call."""
    mapping, deleted = bytearray(range(256)), bytearray()
    for code in range(128):
        out = chr(code).translate(table)
        if not out:
            deleted.append(code)
        elif len(out) == 1 and out.isascii():
            mapping[code] = ord(out)
        else:
            raise ValueError(f"{chr(code)!r} does not map to one ASCII character")
    return bytes(mapping), bytes(deleted)


_ASCII_LINE_KEY = _ascii_byte_tables(LINE_KEY_TABLE)

_FILL_DELETE_TABLE: dict[int, int | None] = {ord(ch): None for ch in FILL_CHARS}
_ASCII_FILL_DELETE = _ascii_byte_tables(_FILL_DELETE_TABLE)
# Symbols that accompany numbers in tables: a unit of digits and these is numeric.
_NUMERIC_DELETE_TABLE: dict[int, int | None] = {ord(ch): None for ch in _DIGITS + "%$€£¥°()[]"}
_LETTER_RE = re.compile(r"[^\W\d_]")
_DIGIT_RE = re.compile(r"\d")
# A model's special tokens (`<|im_start|>`, `<|user|>`, `<|txtMask ...>`) are not markup: no
# page holds them, so copies of them are the model echoing its own template, and they count
# as words. HTML/XML tags and entities are markup, which documents repeat (empty cells).
_TAG_RE = re.compile(r"<(?!\|)[^<>]*>|&#?\w{2,8};")
_SPECIAL_TOKEN_RE = re.compile(r"<\|[^<>]*>")
# Hex literals (`0x00`, `0xFF`) are numbers: register tables and byte arrays repeat them.
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+")


# English number words and ordinals (`sixth`, `fifty-second`, `2nd`): a counter written in
# words changes every copy as digits do. The words are matched through a trie of their letters
# (`_word_trie`): an alternation of sixty words tried at every word start costs eight times more.
_NUMBER_WORD_TEXT = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen first second third fourth fifth sixth seventh eighth "
    "ninth tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth "
    "eighteenth nineteenth twenty thirty forty fifty sixty seventy eighty ninety twentieth "
    "thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth hundred hundredth "
    "thousand thousandth"
)
_NUMBER_WORDS = _NUMBER_WORD_TEXT.split()


def _word_trie(words: list[str]) -> str:
    """A regex alternation of `words` grouped by common prefixes (`f(?:i(?:rst|ve)|our)`)."""
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word[1:])
    parts = []
    for first, rests in sorted(groups.items()):
        longer = [rest for rest in rests if rest]
        if not longer:
            parts.append(first)
            continue
        optional = "?" if len(longer) < len(rests) else ""
        parts.append(f"{first}(?:{_word_trie(longer)}){optional}")
    return "|".join(parts)


_NUMBER_WORD = _word_trie(_NUMBER_WORDS)
_NUMBER_WORD_RE = re.compile(
    rf"\b(?:(?:{_NUMBER_WORD})(?:-(?:{_NUMBER_WORD}))?|\d+(?:st|nd|rd|th))\b"
)


def collapse_number_words(text: str) -> str:
    """English number words and ordinals as `0`, lowercased (`The sixth item` -> `the 0 item`)."""
    return _NUMBER_WORD_RE.sub("0", text.lower())


class UnitClass(Enum):
    """What a repeating unit is made of, from most to least natural to repeat."""

    FILL = "fill"  # leaders, rules, separators only
    MARKUP = "markup"  # tags with nothing but fill between them, e.g. `<td></td>`
    NUMERIC = "numeric"  # digits (with fill), e.g. `0.00|` or `-3`
    LETTERS = "letters"  # words in any script
    SYMBOLS = "symbols"  # no letters, but marks that are not fill: `!`, `？`, emoji, `}`


def strip_markup(text: str) -> str:
    """Remove HTML/XML tags and entities (`<td>`, `<!-- image -->`, `&nbsp;`); special tokens
    (`<|user|>`) stay."""
    if "<" not in text and "&" not in text:
        return text
    return _TAG_RE.sub("", text)


def _canonical_rotation(unit: str) -> str:
    """Rotate a unit found by periodicity (`d></td><td></td></tr><tr><t`, `sp;&nb`, `x00,0`)
    to start at a tag, an entity or a hex literal, so that none is cut in half."""
    doubled = unit + unit
    for marker in ("<", "&", "0x"):
        start = doubled.find(marker)
        if 0 <= start < len(unit):
            return doubled[start : start + len(unit)]
    return unit


def unit_content(unit: str) -> str:
    """A repeating unit without its markup, hex literals turned into plain numbers."""
    return _HEX_RE.sub("0", strip_markup(_canonical_rotation(unit)))


def classify_unit(unit: str) -> UnitClass:
    """Classify an exact-view unit (whitespace already removed).

    A unit that is mostly fill (`Name: ________`, `| a | b |`) counts as fill: a sign-in
    sheet repeats such lines naturally, and a real loop of them runs long anyway.
    """
    rotated = _canonical_rotation(unit)
    without_markup = strip_markup(rotated)
    plain = _HEX_RE.sub("0", without_markup)
    content = plain.translate(_FILL_DELETE_TABLE)
    if 2 * len(content) < len(plain) or not content:
        return UnitClass.FILL if without_markup == rotated else UnitClass.MARKUP
    if _LETTER_RE.search(content):
        return UnitClass.LETTERS
    if content.translate(_NUMERIC_DELETE_TABLE) or not has_digit(content):
        return UnitClass.SYMBOLS
    return UnitClass.NUMERIC


@lru_cache(maxsize=4096)
def classify_char(char: str) -> UnitClass:
    """`classify_unit` for one character, cached: runs of one character are checked often."""
    return classify_unit(char)


def content_chars(text: str) -> int:
    """Characters of `text` that are not fill (leaders, rules, bars): what a copy says."""
    return len(text.translate(_FILL_DELETE_TABLE))


def is_mostly_fill(text: str) -> bool:
    """Whether fill characters make up more than half of `text` (whitespace removed)."""
    if text.isascii():
        kept = len(text.encode("ascii").translate(*_ASCII_FILL_DELETE))
    else:
        kept = len(text.translate(_FILL_DELETE_TABLE))
    return 2 * kept < len(text)


def has_cell_bar(unit: str) -> bool:
    """Whether a unit holds a table-cell bar `|` (the bars of special tokens are not cells)."""
    content = unit_content(unit)
    return "|" in (_SPECIAL_TOKEN_RE.sub("", content) if "<|" in content else content)


def count_letters(unit: str) -> int:
    """Number of letters (any script) in a repeating unit, outside markup."""
    return len(_LETTER_RE.findall(unit_content(unit)))


def exact_view(text: str) -> str:
    """`text.translate(EXACT_TABLE)`, through byte tables when the text is ASCII."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_LOWER, _ASCII_DELETED).decode("ascii")
    return text.translate(EXACT_TABLE)


def line_key_chars(text: str) -> str:
    """`text.translate(LINE_KEY_TABLE)`, through byte tables when the text is ASCII."""
    if text.isascii():
        return text.encode("ascii").translate(*_ASCII_LINE_KEY).decode("ascii")
    return text.translate(LINE_KEY_TABLE)


def exact_and_shape_views(text: str) -> tuple[str, str]:
    """`(exact_view(text), shape_view(exact_view(text)))`: one encode for ASCII text, which
    the online detector normalises once per fed chunk."""
    if not text.isascii():
        exact = text.translate(EXACT_TABLE)
        return exact, collapse_numbers(exact.translate(_SHAPE_DIGIT_TABLE))
    kept = text.encode("ascii").translate(_ASCII_LOWER, _ASCII_DELETED)
    shaped = kept.translate(_ASCII_DIGITS_TO_ZERO).decode("ascii")
    if "00" in shaped:
        shaped = _ZERO_RUN_RE.sub("0", shaped)
    return kept.decode("ascii"), shaped


def shape_view(exact: str) -> str:
    """The shape view of exact-view text: every run of digits or numerals is one "0"."""
    if exact.isascii():
        shaped = exact.encode("ascii").translate(_ASCII_DIGITS_TO_ZERO).decode("ascii")
    else:
        shaped = exact.translate(_SHAPE_DIGIT_TABLE)
    return collapse_numbers(shaped)


def collapse_numbers(shaped: str) -> str:
    """Runs of `0` (numbers already mapped to `0`) read as one."""
    return _ZERO_RUN_RE.sub("0", shaped) if "00" in shaped else shaped


def has_digit(text: str) -> bool:
    return _DIGIT_RE.search(text) is not None
