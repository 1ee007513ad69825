"""The text-layer quality gate: is this text a plausible rendering of the page?

Cheap checks on what the PDF's text layer holds, each naming why a layer is refused, so the
page goes on to OCR with the reason on record (`textlayer_rejected: garbled`):
`garbled` (junk characters, presentation forms, too few known words), `mojibake`, `word_soup`
(run-together letters), `broken_words` (words a broken font cut, lost a glyph of, glued or
spelled out letter by letter: `splits`), `poor_ocr_layer`, `text_as_image`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ftfy.badness import badness

from app.textlayer.model import PageLayout
from app.textlayer.splits import split_report
from app.textlayer.words import known_share, words_of

_MIN_WORDS = 20  # fewer words than this: too few to judge plausibility
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0 and C1, not whitespace
_SOUP_TOKEN = re.compile(r"[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]+")


@dataclass(frozen=True)
class GateConfig:
    """Thresholds of the gate; the defaults are what the olmOCR-bench sample was judged with."""

    languages: tuple[str, ...]
    min_known_words: float = 0.5  # visible text: share of words a word list knows
    min_known_words_invisible: float = 0.8  # an invisible layer is someone's OCR: stricter
    max_junk: float = 0.05  # replacement, private-use and control characters
    max_presentation_forms: float = 0.3  # Arabic in visual-order glyph forms
    max_soup: float = 0.4  # share of letters in run-together tokens of 20+ letters
    max_image_without_text: float = 0.25  # page share of images with no text over them
    min_chars_beside_images: int = 500  # ... on a page whose layer holds fewer characters
    # Words a broken font cut apart, glued or spelled out (`splits`): refused from this share
    # of the page's words (healthy corpus pages: at most 0.012) and this many; as many words
    # mended by one glyph the page hardly shows (a letter or ligature its font cannot give).
    max_broken_words: float = 0.04
    min_broken_words: int = 8


def rejection(layout: PageLayout, config: GateConfig) -> str | None:
    """Why the page's text layer should not be used (None when it should)."""
    text = layout.text
    visible = [ch for ch in text if not ch.isspace()]
    if not visible:
        return None
    if sum(_is_junk(ch) for ch in visible) > config.max_junk * len(visible):
        return "garbled"
    letters = [ch for ch in visible if ch.isalpha()]
    forms = sum(_is_presentation_form(ch) for ch in letters)
    if letters and forms > config.max_presentation_forms * len(letters):
        return "garbled"
    # Control characters are the junk rule's to judge: a symbol font's check boxes mapped to
    # C1 codes (U+0084, 64 on a questionnaire page of 3,000 characters) are not mojibake.
    if badness(_CONTROLS.sub("", text)) > max(3, len(visible) // 200):
        return "mojibake"
    if _soup_share(text) > config.max_soup:
        return "word_soup"
    # Words of scripts no configured word list covers (a Korean or Arabic layer read with
    # English lists) are not judged: read as unknown, they sent whole Hangul and Arabic layers
    # to an English Tesseract (the shared corpus' docling pages: word F1 0.04 for 0.9+).
    words = words_of(text, config.languages)
    invisible = all(line.invisible for line in layout.lines)
    floor = config.min_known_words_invisible if invisible else config.min_known_words
    if len(words) >= _MIN_WORDS and known_share(words, config.languages) < floor:
        return "poor_ocr_layer" if invisible else "garbled"
    if _broken_words(text, len(words), config):
        return "broken_words"
    sparse = sum(ch.isalnum() for ch in visible) < config.min_chars_beside_images
    if sparse and _image_share_without_text(layout) > config.max_image_without_text:
        return "text_as_image"
    return None


def _broken_words(text: str, words: int, config: GateConfig) -> bool:
    report = split_report(text, config.languages)
    if report.glyph_missing and report.mended >= config.min_broken_words:
        return True  # a glyph the page needs again and again and hardly shows
    judged = words + report.spelled  # a spelled-out word has no three-letter token
    return report.misspaced >= max(config.min_broken_words, config.max_broken_words * judged)


def _is_junk(ch: str) -> bool:
    return ch == "\ufffd" or unicodedata.category(ch) in ("Co", "Cc", "Cs", "Cn")


def _is_presentation_form(ch: str) -> bool:
    return "\ufb50" <= ch <= "\ufdff" or "\ufe70" <= ch <= "\ufeff"


def _soup_share(text: str) -> float:
    tokens = _SOUP_TOKEN.findall(text)
    letters = sum(len(t) for t in tokens)
    if letters < 200:
        return 0.0
    return sum(len(t) for t in tokens if len(t) >= 20) / letters


def _image_share_without_text(layout: PageLayout) -> float:
    """Page share covered by sizeable images that no text line lies over."""
    page = layout.box.area or 1.0
    bare = 0.0
    for image in layout.images:
        if image.area < 0.02 * page:
            continue
        if not any(image.contains_center_of(line.box) for line in layout.lines):
            bare += image.area
    return min(1.0, bare / page)
