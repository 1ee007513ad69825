"""When is a PDF's own text layer good enough to stand in for OCR."""

from __future__ import annotations

import unicodedata


def meaningful_chars(text: str) -> int:
    """Letters and digits, the characters that carry content."""
    return sum(1 for ch in text if ch.isalnum())


def text_layer_is_usable(text: str, min_chars: int) -> bool:
    """A text layer is usable when it has enough content and is not mojibake.

    Broken font encodings show up as replacement characters, private-use glyphs or control
    characters; more than a few percent of those means OCR will do better.
    """
    if meaningful_chars(text) < min_chars:
        return False
    visible = [ch for ch in text if not ch.isspace()]
    junk = sum(1 for ch in visible if _is_junk(ch))
    return junk <= 0.05 * len(visible)


def _is_junk(ch: str) -> bool:
    if ch == "\ufffd":
        return True
    category = unicodedata.category(ch)
    return category in ("Co", "Cc", "Cs", "Cn")
