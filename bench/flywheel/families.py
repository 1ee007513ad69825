"""Page families for the flywheel's arms bench: layouts that real OCR models loop on.

The taught model read only prose (docstrings) in training; each family here puts that prose, or
numbers, in a layout it never saw, the way real pages do: contents pages (dot leaders), tables
of numbers, numbered lists, a header repeated down the page, forms (underscore fill), and long
lines without spaces (hashes). Which of them make it loop, and how, is measured
(`python -m bench flywheel-arms`), not assumed: a family that never loops stays in the table.
A page of one line repeated is not here: Folio's detector calls its true transcription a loop
(20 of 20 such pages), so it would measure the detector, not the model.
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Callable, Sequence

from bench.flywheel import data
from bench.flywheel.pages import PageSpec

Lines = list[str]
MIN_LINES, MAX_LINES = 4, 10  # as the training pages, at least long enough to repeat
LONG_EXTRA = 4  # `long` pages: 8-14 lines; 14 lines' image tokens (280) + the prompt + the
# token cap (pages.MAX_TOKENS) still fit the server's 2,048-token window
WIDE_COLUMNS = 56


def prose(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    return data.page_lines(source, rng, count)


def contents(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    return data.with_leaders(prose(source, rng, count), rng, 1.0)


def numbered(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    """`1. first words of a line`: a list's numbers count up, its items are prose."""
    first = rng.randint(1, 20)
    out = []
    for index, line in enumerate(prose(source, rng, count)):
        out.append(_fit(f"{first + index}. {line}"))
    return out


def table(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    """A header of words over rows of four right-aligned numbers in 10-column cells."""
    words = [w for line in prose(source, rng, 3) for w in line.split() if w.isalpha()]
    header = "".join(f"{w[:9]:>10}" for w in (words + ["total"] * 4)[:4])
    rows = [header]
    for _ in range(count - 1):
        cells = [_number(rng) for _ in range(4)]
        rows.append("".join(f"{cell:>10}" for cell in cells))
    return rows


def headers(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    """A running header (a line's first words) before every line of prose."""
    lines = prose(source, rng, count)
    head = " ".join(lines[0].split()[:3]).upper()
    out: Lines = []
    for line in lines[1:]:
        out += [head, line]
    return out[:count]


def form(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    """A form's fields: a label of 1-2 words, then an underscore rule to the margin."""
    out = []
    for line in prose(source, rng, count):
        label = " ".join(line.split()[: rng.randint(1, 2)])[:18].rstrip(".,;:") + ":"
        out.append(f"{label} {'_' * (data.COLUMNS - len(label) - 1)}")
    return out


def form_wide(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    """A form as wide as `wide` pages (50-56 columns): where the probe found the base running
    its rules out to a fill loop on about two pages in five (`probe.py`)."""
    width = rng.randint(50, WIDE_COLUMNS)
    out = []
    for line in prose(source, rng, count):
        label = " ".join(line.split()[: rng.randint(1, 2)])[:18].rstrip(".,;:") + ":"
        out.append(f"{label} {'_' * (width - len(label) - 1)}")
    return out


def columns(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    """A word list in columns (three of one word in 14 columns, or two of two words in 20),
    read across: the base reads the first column down and repeats its words line by line."""
    across, width, words = rng.choice(((3, 14, 1), (2, 20, 2)))
    found = [w for line in prose(source, rng, 4 * count) for w in line.split() if w.isalpha()]
    cells = [" ".join(found[i : i + words])[: width - 2] for i in range(0, len(found), words)]
    rows = [cells[r * across : (r + 1) * across] for r in range(count)]
    return ["".join(f"{c:<{width}}" for c in row[:-1]) + row[-1]
            for row in rows if len(row) == across]  # fmt: skip


def hashes(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    """Long lines without a space: 40 hexadecimal digits each (a checksum listing)."""
    return ["".join(rng.choice("0123456789abcdef") for _ in range(data.COLUMNS))
            for _ in range(count)]  # fmt: skip


def long(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    """More lines than any training page held (11-14; training pages had 1-10)."""
    return prose(source, rng, count + LONG_EXTRA)


def wide(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    """Lines of 56 columns (training lines had at most 40): the same prose, wrapped wider."""
    text = " ".join(prose(source, rng, count + count // 2))
    return textwrap.wrap(text, WIDE_COLUMNS)[:count]


FAMILIES: dict[str, Callable[[Sequence[str], random.Random, int], Lines]] = {
    "prose": prose,
    "contents": contents,
    "numbered": numbered,
    "table": table,
    "headers": headers,
    "form": form,
    "hashes": hashes,
    "long": long,
    "wide": wide,
    "form_wide": form_wide,
    "columns": columns,
}


def choose(
    sources: list[list[str]], count: int, prefix: str, rng: random.Random,
    families: Sequence[str] = tuple(FAMILIES),
) -> list[PageSpec]:  # fmt: skip
    """`count` pages, the families in turn, each from one random source of `sources`;
    the family is in the page's name (`PREFIX-FAMILY-NNNN`)."""
    usable = [lines for lines in sources if len(lines) >= 2 * (MAX_LINES + LONG_EXTRA)]
    pages = []
    for index in range(count):
        family = families[index % len(families)]
        lines = FAMILIES[family](rng.choice(usable), rng, rng.randint(MIN_LINES, MAX_LINES))
        pages.append(PageSpec(f"{prefix}-{family}-{index:04d}", lines))
    return pages


def family_of(name: str) -> str:
    """The family in a page's document name (`held_out-table-0007` -> `table`)."""
    return name.split("-")[-2]


def _fit(line: str) -> str:
    if len(line) <= data.COLUMNS:
        return line
    return line[: data.COLUMNS].rsplit(" ", 1)[0]


def _number(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return str(rng.randint(0, 99999))
    return f"{rng.uniform(0, 1000):.{rng.randint(1, 3)}f}"
