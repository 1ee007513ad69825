"""Is this text made of words? Word plausibility from `wordfreq`'s lists, across languages."""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from wordfreq import get_frequency_dict

# Languages tried for each word: a word known in any of them is a word. Tesseract codes map to
# wordfreq's; English is always tried (names, terms and citations are often English).
_TESSERACT_TO_WORDFREQ = {
    "eng": "en", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "por": "pt", "nld": "nl",
    "pol": "pl", "ces": "cs", "swe": "sv", "dan": "da", "nor": "nb", "fin": "fi", "tur": "tr",
    "rus": "ru", "ukr": "uk", "ell": "el", "hun": "hu", "ron": "ro", "cat": "ca", "ind": "id",
}  # fmt: skip
_DEFAULT_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl")
# The script each word list is written in (Latin unless named): a word in another script
# (Hangul, Arabic, Han) is one no list here can judge, not an unknown one.
_SCRIPTS = {"ru": "CYRILLIC", "uk": "CYRILLIC", "el": "GREEK"}
_WORD = re.compile(r"[^\W\d_]{3,}")
_LONG_WORD = re.compile(r"[^\W\d_]{15,}")
_SAMPLE = 400  # words looked up per page: enough for a verdict, bounded cost


def languages_for(tesseract_lang: str) -> tuple[str, ...]:
    """wordfreq languages for a Tesseract setting such as 'eng+deu', after the common ones."""
    named = [_TESSERACT_TO_WORDFREQ.get(code) for code in tesseract_lang.split("+")]
    return tuple(dict.fromkeys([*_DEFAULT_LANGUAGES, *(code for code in named if code)]))


def words_of(text: str, languages: tuple[str, ...] | None = None) -> list[str]:
    """Alphabetic tokens of three letters or more, the ones a word list can judge; with
    `languages`, only those in a script one of their lists is written in."""
    words = _WORD.findall(text)
    if languages is not None:
        scripts = {_SCRIPTS.get(language, "LATIN") for language in languages}
        words = [word for word in words if script_of(word) in scripts]
    return words[:_SAMPLE]


def script_of(word: str) -> str:
    """The Unicode script name of a word's first letter: LATIN, CYRILLIC, HANGUL, ARABIC..."""
    return unicodedata.name(word[0], "UNKNOWN").split(" ")[0] if word else "UNKNOWN"


def has_run_together_words(text: str) -> bool:
    """Whether `text` holds a long letter run that no word list knows ("Compositionofthe")."""
    return any(not is_word(word) for word in _LONG_WORD.findall(text))


def known_share(words: list[str], languages: tuple[str, ...]) -> float:
    """Share of `words` that some language in `languages` knows; 1.0 for no words."""
    if not words:
        return 1.0
    lists = [_word_list(language) for language in languages]
    return sum(any(w.casefold() in known for known in lists) for w in words) / len(words)


@cache
def _word_list(language: str) -> dict[str, float]:
    """wordfreq's small list for `language` (a few hundred KB, loaded once per process)."""
    return get_frequency_dict(language, wordlist="small")


def is_word(word: str, languages: tuple[str, ...] = _DEFAULT_LANGUAGES) -> bool:
    """Whether some language in `languages` knows `word`."""
    return any(word.casefold() in _word_list(language) for language in languages)
