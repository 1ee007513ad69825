"""Unicode clean-up of text-layer strings: detached accents, ligatures, mojibake."""

from __future__ import annotations

import re
import unicodedata

import ftfy

# TeX draws an accent as its own glyph before the letter ("J´an Min´aˇc"); the PDF's text then
# holds the spacing form of the accent. Map each to its combining form and let NFC compose.
_SPACING_TO_COMBINING = {
    "\u00b4": "\u0301",  # ´ acute
    "`": "\u0300",  # grave
    "\u02c6": "\u0302",  # ˆ circumflex
    "\u02dc": "\u0303",  # ˜ tilde
    "\u00a8": "\u0308",  # ¨ diaeresis
    "\u02c7": "\u030c",  # ˇ caron
    "\u02d8": "\u0306",  # ˘ breve
    "\u02d9": "\u0307",  # ˙ dot above
    "\u02da": "\u030a",  # ˚ ring above
    "\u00b8": "\u0327",  # ¸ cedilla
    "\u02db": "\u0328",  # ˛ ogonek
    "\u00af": "\u0304",  # ¯ macron
    "\u02dd": "\u030b",  # ˝ double acute
}
_ACCENT_BEFORE_LETTER = re.compile(
    "([" + "".join(re.escape(c) for c in _SPACING_TO_COMBINING if c != "`") + r"])\s?([^\W\d_])"
)
_FTFY = ftfy.TextFixerConfig(uncurl_quotes=False, fix_character_width=False, explain=False)


def normalize(text: str) -> str:
    """Mojibake fixed, ligatures split, detached accents composed, NFC."""
    text = ftfy.fix_text(text, _FTFY)
    # TeX's ``quotes'' come out of PDFs as two single quotes each.
    text = text.replace("\u2018\u2018", "\u201c").replace("\u2019\u2019", "\u201d")
    text = _ACCENT_BEFORE_LETTER.sub(_compose, text)
    return unicodedata.normalize("NFC", text)


def _compose(match: re.Match[str]) -> str:
    accent, letter = match.groups()
    composed = unicodedata.normalize("NFC", letter + _SPACING_TO_COMBINING[accent])
    # Only where the pair makes a real precomposed letter; otherwise leave the text alone.
    return composed if len(composed) == 1 else match.group(0)
