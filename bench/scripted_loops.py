"""Loop shapes that real OCR models fall into, built from real pages (pure, no I/O).

Each shape is a script for the scripted test server: the opening of a healthy page, then a
loop that runs on long past any token cap. Periods go from 1 to 500+ characters, exact and
with changing digits, as in production: character runs, repeated words and lines, table rows
re-emitted with other numbers, whole blocks, and the real degenerate tails of the dev corpus
continued with their own last cycle.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from bench.ocr.text import OcrText

_DIGITS = re.compile(r"\d+")
_ELIDED_END = re.compile(r"\s*(\.{3,}|…)\s*$")
PREFIX_CHARS = (150, 600)  # healthy text before the loop starts
LONG_PAGE_CHARS = 1500  # loops are built from pages long enough to hold a 800-character block


@dataclass(frozen=True)
class LoopShape:
    name: str  # shape family, e.g. "row-digits"
    source: str  # the page or dev-corpus entry it was built from
    period_chars: int  # characters per cycle (approximate for drifting loops)
    text: str  # healthy opening + loop, at least the asked length


def build_shapes(
    pages: list[OcrText], tails: list[OcrText], min_chars: int, seed: int = 3
) -> list[LoopShape]:
    """One shape of each family (built from real pages) plus every real degenerate tail."""
    rng = random.Random(seed)
    long_pages = [page for page in pages if len(page.text) >= LONG_PAGE_CHARS] or pages
    shapes = []
    for name, build in BUILDERS.items():
        page = long_pages[rng.randrange(len(long_pages))]
        prefix = _prefix(page.text, rng)
        unit_period, cycle = build(page.text, rng)
        shapes.append(LoopShape(name, page.source, unit_period, prefix + _run(cycle, min_chars)))
    for tail in tails:
        text = _ELIDED_END.sub("", tail.text)  # excerpts end in '...' where they were cut
        period = tail_period(text)
        unit = text[-period:]
        looped = text + _run(_same(unit), min_chars)
        shapes.append(LoopShape("real-tail", tail.source, period, looped))
    return shapes


def tail_period(text: str, max_period: int = 600, min_chars: int = 48) -> int:
    """Smallest p whose last max(3, min_chars / p) cycles repeat exactly (so a '!!!' at the
    end of a line loop is not taken for the loop); a third of the text when none does."""
    for period in range(1, min(max_period, len(text) // 3) + 1):
        copies = max(3, -(-min_chars // period))
        tail = text[-copies * period :]
        if len(tail) == copies * period and tail == tail[-period:] * copies:
            return period
    return max(1, len(text) // 3)


Cycle = Callable[[int], str]  # copy number -> the text of that copy


def _same(unit: str) -> Cycle:
    """Every copy the same text."""
    return lambda _copy: unit


def _run(cycle: Cycle, min_chars: int) -> str:
    parts: list[str] = []
    total = copy = 0
    while total < min_chars:
        parts.append(piece := cycle(copy))
        total += len(piece)
        copy += 1
    return "".join(parts)


def _prefix(text: str, rng: random.Random) -> str:
    cut = min(len(text), rng.randint(*PREFIX_CHARS))
    end = text.rfind("\n", 0, cut)
    return text[: end + 1] if end > 0 else text[:cut] + "\n"


def _lines(text: str, low: int, high: int) -> list[str]:
    lines = [line.strip() for line in text.splitlines()]
    fitting = [line for line in lines if low <= len(line) <= high]
    return fitting or [line[:high] for line in lines if len(line) >= low] or [text[:high]]


def _char_run(_text: str, rng: random.Random) -> tuple[int, Cycle]:
    char = rng.choice("!0-.")
    return 1, lambda _k: char


def _two_chars(_text: str, rng: random.Random) -> tuple[int, Cycle]:
    pair = rng.choice(["-3", "1 ", "! "])
    return 2, lambda _k: pair


def _word(text: str, rng: random.Random) -> tuple[int, Cycle]:
    words = re.findall(r"[A-Za-z]{4,12}", text) or ["value"]
    unit = rng.choice(words) + " "
    return len(unit), lambda _k: unit


def _line_exact(text: str, rng: random.Random) -> tuple[int, Cycle]:
    line = rng.choice(_lines(text, 20, 90)) + "\n"
    return len(line), lambda _k: line


def _line_counter(text: str, rng: random.Random) -> tuple[int, Cycle]:
    """A line re-emitted with a counter that goes up: 'Step 12: ...', 'Step 13: ...'."""
    line = rng.choice(_lines(text, 20, 80))
    start = rng.randint(1, 50)
    return len(line) + 6, lambda k: f"{start + k}. {line}\n"


def _row_digits(text: str, rng: random.Random) -> tuple[int, Cycle]:
    """A table row re-emitted with other numbers in its cells."""
    rows = [row for row in _lines(text, 12, 200) if row.count("|") >= 3 and _DIGITS.search(row)]
    row = rng.choice(rows) if rows else "| Total | 1,234.56 | 78 | 0.5% |"

    def copy(k: int) -> str:
        copy_rng = random.Random(k * 7919 + len(row))
        return _DIGITS.sub(lambda m: _other_number(m.group(0), copy_rng), row) + "\n"

    return len(row) + 1, copy


def _block_exact(text: str, rng: random.Random) -> tuple[int, Cycle]:
    block = _block(text, rng, 300, 500)
    return len(block), lambda _k: block


def _block_digits(text: str, rng: random.Random) -> tuple[int, Cycle]:
    """A 500+ character block whose numbers move on with every copy (a drifting page)."""
    block = _block(text, rng, 500, 800)
    if not _DIGITS.search(block):
        block = "Page 1. " + block

    def copy(k: int) -> str:
        return _DIGITS.sub(lambda m: str(int(m.group(0)[:9]) + k), block)

    return len(block), copy


def _block(text: str, rng: random.Random, low: int, high: int) -> str:
    size = rng.randint(low, high)
    if len(text) <= size:
        return (text.strip() + "\n") * max(1, size // max(1, len(text)))
    start = rng.randrange(0, len(text) - size)
    return text[start : start + size].rstrip() + "\n\n"


def _other_number(digits: str, rng: random.Random) -> str:
    first = rng.choice("123456789") if len(digits) > 1 else rng.choice("0123456789")
    return first + "".join(rng.choice("0123456789") for _ in digits[1:])


BUILDERS: dict[str, Callable[[str, random.Random], tuple[int, Cycle]]] = {
    "char-run": _char_run,
    "two-chars": _two_chars,
    "word": _word,
    "line-exact": _line_exact,
    "line-counter": _line_counter,
    "row-digits": _row_digits,
    "block-exact": _block_exact,
    "block-digits": _block_digits,
}
