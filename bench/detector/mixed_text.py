"""Deterministic synthetic text for the detector benchmark: OCR-like pages with some loops."""

import random
from collections.abc import Callable, Iterator

_WORD_LIST = (
    "the of and to in is that for it as with was on be by this are or from at an which have "
    "not has but were their been they more can one all also other such its into some these "
    "than may only when most time used two first new would many between over report table "
    "river stone window paper value method result figure section analysis data sample model "
    "pressure valve annual revenue growth market policy survey patient study group level"
)
WORDS = _WORD_LIST.split()
_HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能"


def prose(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(3, 8)):
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 20))]
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences) + "\n\n"


def table(rng: random.Random) -> str:
    columns = rng.randint(3, 9)
    lines = ["| " + " | ".join(rng.choice(WORDS).title() for _ in range(columns)) + " |"]
    lines.append("|" + "---|" * columns)
    for _ in range(rng.randint(3, 15)):
        cells = [rng.choice(["0.00", f"{rng.random() * 100:.2f}", ""]) for _ in range(columns)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n"


def cjk(rng: random.Random) -> str:
    return "".join(rng.choice(_HAN) for _ in range(rng.randint(60, 200))) + "。\n\n"


def contents(rng: random.Random) -> str:
    lines = [
        f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {'.' * rng.randint(20, 90)} "
        f"{rng.randint(1, 300)}"
        for _ in range(rng.randint(3, 10))
    ]
    return "\n".join(lines) + "\n\n"


def loop(rng: random.Random) -> str:
    unit = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
    unit += rng.choice([" ", "\n", ". "])
    return unit * max(8, 600 // len(unit)) + "\n\n"


_PARTS: list[Callable[[random.Random], str]] = [prose, prose, prose, table, cjk, contents]


def mixed_text(size: int, seed: int = 7, loop_every: int = 50) -> str:
    """About `size` characters of pages; one part in `loop_every` is a repetition loop."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        build = loop if rng.randrange(loop_every) == 0 else rng.choice(_PARTS)
        part = build(rng)
        parts.append(part)
        total += len(part)
    return "".join(parts)[:size]


def chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]
