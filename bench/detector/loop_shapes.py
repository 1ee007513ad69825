"""Loop shapes built from real healthy OCR text, the way models loop on such pages.

Every sample starts with a real healthy text cut at a paragraph break (the page so far), then
a repeating unit taken from real text too: a diagram row drawn from a real table, a real
section or chat-template turn, a real table section or row whose numbers change in every copy,
a real sentence coming back with a counter or with one word translated (Latin, Chinese,
Korean), a field list made of a real table's header and row. `onset` is where the first copy
starts and `period` the mean raw length of a copy. Each sample comes twice: streamed on (the
loop keeps going, for the online detector) and cut at the token cap after 2 to 3 copies.
"""

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench.detector.devset_sources import HealthyText

_NUMBER_RE = re.compile(r"\d+")
_SENTENCE_RE = re.compile(r"[^.!?\n]{60,220}[.!?]")
_CJK_SENTENCE_RE = re.compile(r"[^。\n]{12,90}。")
_CJK_RE = re.compile(r"[\u4e00-\u9fff\uac00-\ud7af]")
_NOT_PROSE_RE = re.compile(r"[\u4e00-\u9fff\uac00-\ud7af|<>]")  # CJK, table bars, tags
_TRANSLATIONS = {
    "the": ("der", "le", "el"),
    "and": ("und", "et", "y"),
    "of": ("von", "de", "del"),
    "for": ("für", "pour", "para"),
    "with": ("mit", "avec", "con"),
    "data": ("Daten", "données", "datos"),
    "is": ("ist", "est", "es"),
    "in": ("im", "dans", "en"),
}
_CJK_WORDS = ("数据", "data", "データ", "資料")
_CJK_NUMERALS = "一二三四五六七八九十"
SHAPES = (
    "diagram_row",
    "long_block",
    "chat_turn",
    "section_numbers",
    "row_numbers",
    "field_list",
    "sentence_counter",
    "sentence_word",
    "cjk_counter",
    "cjk_word",
)


@dataclass(frozen=True, slots=True)
class LoopSample:
    id: str
    shape: str
    text: str  # the stream, going on well past three copies
    capped: str  # the same output cut by the token cap after 2-3 copies
    onset: int
    period: float


@dataclass(frozen=True, slots=True)
class _Material:
    tables: list[list[str]]  # runs of Markdown table rows
    sections: list[str]  # heading plus paragraphs
    sentences: list[str]
    cjk_sentences: list[str]
    prefixes: list[str]


def build_samples(
    texts: list[HealthyText], per_shape: int = 12, seed: int = 13
) -> list[LoopSample]:
    material = _material(texts)
    builders: dict[str, Callable[[random.Random, _Material], tuple[str, Iterator[str]]]] = {
        "diagram_row": _diagram_row,
        "long_block": _long_block,
        "chat_turn": _chat_turn,
        "section_numbers": _section_numbers,
        "row_numbers": _row_numbers,
        "field_list": _field_list,
        "sentence_counter": _sentence_counter,
        "sentence_word": _sentence_word,
        "cjk_counter": _cjk_counter,
        "cjk_word": _cjk_word,
    }
    samples = []
    for shape in SHAPES:
        rng = random.Random(f"{seed}:{shape}")
        for index in range(per_shape):
            prefix = rng.choice(material.prefixes)
            lead, copies = builders[shape](rng, material)
            samples.append(_sample(f"{shape}-{index}", shape, prefix + lead, copies, rng))
    return samples


def _sample(
    sample_id: str, shape: str, prefix: str, copies: Iterator[str], rng: random.Random
) -> LoopSample:
    units = [next(copies) for _ in range(6)]
    period = sum(map(len, units)) / len(units)
    while sum(map(len, units)) < 3 * period + 600:
        units.append(next(copies))
    cut = int(len(units[0]) + len(units[1]) + rng.choice((0.05, 0.3, 0.6, 1.2)) * period)
    body = "".join(units)
    return LoopSample(sample_id, shape, prefix + body, prefix + body[:cut], len(prefix), period)


def _material(texts: list[HealthyText]) -> _Material:
    tables, sections, sentences, cjk, prefixes = [], [], [], [], []
    for item in texts:
        text = item.text
        tables.extend(_tables(text))
        sections.extend(_sections(text))
        # Prose only: a "sentence" holding table bars or tags is a row fragment (`| 22 | ...`).
        sentences.extend(
            s.strip() for s in _SENTENCE_RE.findall(text) if not _NOT_PROSE_RE.search(s)
        )
        cjk.extend(s.strip() for s in _CJK_SENTENCE_RE.findall(text) if _CJK_RE.search(s))
        cjk.extend(_korean_sentences(text))
        paragraphs = text.split("\n\n")
        if item.origin == "dev corpus prefix":
            continue  # material only: these outputs loop further on
        prefixes.append("\n\n".join(paragraphs[: max(1, len(paragraphs) // 2)]) + "\n\n")
    return _Material(tables, sections, sentences, sorted(set(cjk)), prefixes)


def _tables(text: str) -> Iterator[list[str]]:
    rows: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|") and line.rstrip().endswith("|"):
            rows.append(line.strip())
            continue
        if len(rows) >= 4 and len(rows[0]) < 400:
            yield rows
        rows = []


def _sections(text: str) -> Iterator[str]:
    for block in re.split(r"\n(?=#{1,4} )", text):
        if block.startswith("#") and 300 <= len(block) <= 1800 and "|" not in block:
            yield block.strip() + "\n\n"


def _korean_sentences(text: str) -> Iterator[str]:
    for match in re.finditer(r"[^.\n]{30,160}다\.", text):
        if len(_CJK_RE.findall(match.group())) > 10:
            yield match.group().strip()


def _renumber(rng: random.Random, text: str) -> str:
    return _NUMBER_RE.sub(lambda m: str(rng.randint(1, 10 ** rng.randint(1, 3))), text)


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip("|").split("|")]


def _repeat(make: Callable[[int], str]) -> Iterator[str]:
    copy = 0
    while True:
        yield make(copy)
        copy += 1


def _diagram_row(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    table = rng.choice([t for t in material.tables if len(_cells(t[0])) >= 3])
    widths = [min(24, max(8, len(cell) + 2)) for cell in _cells(table[0])][:6]
    bar, top, mid = ("│", "┌┬┐─", "├┼┤─") if rng.random() < 0.5 else ("|", "+++-", "+++-")

    def rule(chars: str) -> str:
        return chars[0] + chars[1].join(chars[3] * w for w in widths) + chars[2] + "\n"

    def row(cells: list[str]) -> str:
        padded = [*cells, *[""] * len(widths)]
        pairs = zip(padded, widths, strict=False)
        return bar + bar.join(f" {c[: w - 2]:<{w - 2}} " for c, w in pairs) + bar

    lead = "```\n" + rule(top) + row(_cells(table[0])) + "\n" + rule(mid)
    lead += "".join(row(_cells(r)) + "\n" for r in table[2:4])
    blank = row([]) + "\n"
    return lead, _repeat(lambda _: blank)


def _long_block(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    block = rng.choice(material.sections)
    return "", _repeat(lambda _: block)


def _chat_turn(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    turn = f"<|im_start|>assistant\n{rng.choice(material.sections).strip()}<|im_end|>\n"
    return "", _repeat(lambda _: turn)


def _numeric_tables(material: _Material) -> list[list[str]]:
    return [t for t in material.tables if sum(map(bool, map(_NUMBER_RE.search, t[2:]))) >= 2]


def _section_numbers(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    table = rng.choice(_numeric_tables(material))[:7]
    heading = f"## Table {rng.randint(1, 9)}: {_cells(table[0])[0] or 'Results'}\n\n"
    return "", _repeat(lambda _: heading + "\n".join(_renumber(rng, row) for row in table) + "\n\n")


def _row_numbers(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    rows = [r for t in _numeric_tables(material) for r in t[2:] if _NUMBER_RE.search(r)]
    row = rng.choice([r for r in rows if len(re.findall(r"[^\W\d_]", r)) >= 16] or rows)
    return "", _repeat(lambda _: _renumber(rng, row) + "\n")


def _field_list(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    table = rng.choice(_numeric_tables(material))
    names, values = _cells(table[0]), _cells(rng.choice(table[2:]))
    fields = "\n".join(
        [f"{n or 'Field'}: {v}" for n, v in zip(names, values, strict=False) if v][:6]
    )
    first = rng.randint(1, 50)
    return "", _repeat(lambda k: f"Record {first + k}\n" + _renumber(rng, fields) + "\n\n")


def _sentence_counter(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    sentence = rng.choice(material.sentences)
    template = rng.choice(("Step {0}: {1} ", "({0}) {1}\n", "{0}. {1}\n", "{1} [{0}]\n"))
    first = rng.randint(1, 8)
    return "", _repeat(lambda k: template.format(first + k, sentence))


def _sentence_word(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    usable = [s for s in material.sentences if any(f" {w} " in s for w in _TRANSLATIONS)]
    sentence = rng.choice(usable)
    word = next(w for w in _TRANSLATIONS if f" {w} " in sentence)
    separator = rng.choice((" ", "\n"))
    options = (word, *_TRANSLATIONS[word])
    return "", _repeat(
        lambda k: sentence.replace(f" {word} ", f" {options[k % 4]} ", 1) + separator
    )


def _cjk_counter(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    sentence = rng.choice(material.cjk_sentences)
    separator = rng.choice(("", "\n"))
    numerals = rng.random() < 0.5

    def copy(k: int) -> str:
        numeral = _CJK_NUMERALS[k % 10] if numerals else str(k + 1)
        return f"第{numeral}条：{sentence}{separator}"

    return "", _repeat(copy)


def _cjk_word(rng: random.Random, material: _Material) -> tuple[str, Iterator[str]]:
    sentence = rng.choice(material.cjk_sentences)
    at = rng.randrange(2, max(3, len(sentence) - 4))
    separator = rng.choice(("", "\n"))
    return "", _repeat(lambda k: sentence[:at] + _CJK_WORDS[k % 4] + sentence[at + 2 :] + separator)
