"""A page's invisible text as a content stream: each run of words one text object line, in
render mode 3 (neither filled nor stroked), in the glyphless font, scaled to its box.

A run is a word, or words written without a space between them (CJK characters); a space
follows it where the kept text has one, so a reader's copy has the kept text's spaces and not
guesses from gaps. Every run on a line shares the line's height and baseline, so a reader joins
them into one line. Boxes are in points of the page as shown (top-left origin); `to_user` is
the matrix from there to the PDF's user space (the page's rotation and offsets).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from app.positions.model import Box
from app.searchable.align import PlacedWord
from app.searchable.build_font import ADVANCE, ASCENT, UNITS_PER_EM
from app.searchable.font import RESOURCE, CodeMap, zero_width

Matrix = tuple[float, float, float, float, float, float]
_EM_BELOW = 1 - ASCENT / UNITS_PER_EM  # the part of a box under the baseline
_GLYPH = ADVANCE / UNITS_PER_EM  # a glyph's advance at size 1


@dataclass(frozen=True)
class Run:
    text: str  # what is written, its trailing space included
    box: Box  # where its characters (not the space) go


def runs(placed: Sequence[PlacedWord], lines: dict[int, Box]) -> list[Run]:
    """Placed words joined into runs: a word and the words joined to it on its line; each run
    as tall as its line."""
    found: list[Run] = []
    for index, word in enumerate(placed):
        after = placed[index + 1] if index + 1 < len(placed) else None
        space = " " if after is not None and not after.token.joined else ""
        _, y0, _, y1 = lines.get(word.line, word.box)
        box = (word.box[0], y0, word.box[2], y1)
        if found and word.token.joined and placed[index - 1].line == word.line:
            last = found.pop()
            box = (min(last.box[0], box[0]), y0, max(last.box[2], box[2]), y1)
            found.append(Run(last.text + word.token.text + space, box))
        else:
            found.append(Run(word.token.text + space, box))
    return found


def concat(first: Matrix, then: Matrix) -> Matrix:
    """`first` followed by `then` (row vectors, as PDF writes matrices)."""
    a, b, c, d, e, f = first
    p, q, r, s, t, u = then
    return (
        a * p + b * r,
        a * q + b * s,
        c * p + d * r,
        c * q + d * s,
        e * p + f * r + t,
        e * q + f * s + u,
    )


def _number(value: float) -> str:
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def run_matrix(run: Run, to_user: Matrix) -> Matrix:
    """Text space to user space for `run`: its characters (less the trailing space) fill its
    box's width; size 1 is the box's height, ascent above the baseline, descent below."""
    x0, y0, x1, y1 = run.box
    height = max(y1 - y0, 0.1)
    glyphs = max(sum(not zero_width(c) for c in run.text.rstrip(" ")), 1)
    across = max(x1 - x0, 0.1) / (glyphs * _GLYPH)
    baseline = y1 - _EM_BELOW * height
    if run.text.endswith(" ") and right_to_left(run.text):  # its space drawn on its left
        x0 -= across * _GLYPH
    return concat((across, 0.0, 0.0, -height, x0, baseline), to_user)


def drawn(text: str) -> str:
    """A run's characters in the order a PDF draws them: left to right on the page, so a
    right-to-left word's reversed (as every PDF producer lays out Arabic and Hebrew); readers
    (MuPDF, poppler) turn such runs back to logical order."""
    if not right_to_left(text):
        return text
    word = text.rstrip(" ")
    # Character by character, marks included: readers reverse such a run the same way.
    return text[len(word) :] + word[::-1]


def right_to_left(text: str) -> bool:
    """Whether `text`'s first strongly directed character is of a right-to-left script."""
    for char in text:
        direction = unicodedata.bidirectional(char)
        if direction in ("R", "AL"):
            return True
        if direction == "L":
            return False
    return False


def content_stream(
    placed: Sequence[PlacedWord], lines: dict[int, Box], to_user: Matrix, codes: CodeMap
) -> bytes:
    """The page's invisible text, to append after its own content (in its own `q`/`Q`)."""
    parts = ["q", "BT", "3 Tr", f"/{RESOURCE} 1 Tf"]
    for run in runs(placed, lines):
        matrix = " ".join(_number(v) for v in run_matrix(run, to_user))
        parts.append(f"{matrix} Tm <{codes.hex(drawn(run.text))}> Tj")
    parts += ["ET", "Q"]
    return ("\n".join(parts) + "\n").encode()
