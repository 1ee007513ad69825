"""Display formulas in a text layer, found by their glyphs and written as LaTeX (`formula`).

A formula set on its own lines (TeX's display math, an equation block in a web page) reaches the
PDF as glyphs placed by size and baseline: exponents small and raised, limits under a sum,
a fraction's numerator over its denominator. Read as text they come out scrambled
("e + iπ 1 = 0"). Here the short lines that hold math signs and no prose are gathered into
clusters of nearby glyphs; a cluster with a relation or operator in it, and no prose line
beside it, is a display formula, rendered by `formula.latex` and set as `$$ ... $$`. Formulas
inside a sentence stay text: their glyphs cannot be told from the prose's italics reliably.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.textlayer.formula import OPERATORS, latex
from app.textlayer.model import Box, Glyph, TextLine
from app.textlayer.words import is_word

_SIGNS = frozenset("=+−×÷±∓⋅·∫∬∮∑∏√∞∂∇≤≥≠≈≡∼∈∉⊂⊆∪∩→←↦′")
_GREEK = re.compile(r"[\u0391-\u03c9\u03d1\u03d5\u03f5]")
_FUNCTIONS = frozenset({"sin", "cos", "tan", "log", "exp", "lim", "max", "min", "det", "sup"})
_WORD = re.compile(r"[^\W\d_]{3,}")
_MIN_GLYPHS = 3
_STRUCTURE = re.compile(r"[_^]\{|\\frac|\\int|\\sum|\\prod|\\oint|\\iint")
_LABEL = re.compile(r"^\(?(\d{1,3}|[a-z])[.)]$")  # "150.", "(a)": an exercise's number


def has_math_signs(text: str) -> bool:
    """Whether `text` holds a sign that formulas use (relations, operators, Greek letters)."""
    return bool(_SIGNS.intersection(text)) or bool(_GREEK.search(text))


@dataclass(frozen=True)
class Equation:
    box: Box
    latex: str
    lines: frozenset[int]  # indexes of the text lines it replaces


def display_equations(lines: Sequence[TextLine], settled: set[int]) -> list[Equation]:
    """The displayed formulas among `lines` (leaving out the `settled` ones)."""
    candidates = [
        i for i, line in enumerate(lines) if i not in settled and line.glyphs and _is_math(line)
    ]
    if not candidates:
        return []
    prose = [
        line.box
        for i, line in enumerate(lines)
        if i not in settled and i not in candidates and any(ch.isalnum() for ch in line.text)
    ]
    glyphs = [(i, glyph) for i in candidates for glyph in lines[i].glyphs]
    equations = []
    taken: set[int] = set()
    for cluster in _clusters([g for _, g in glyphs]):
        members = [glyphs[k] for k in cluster]
        box = _bounds([g.box for _, g in members])
        if not _is_display(members, box, prose):
            continue
        text = latex([g for _, g in members])
        if _STRUCTURE.search(text):  # scripts, fractions, limits: what plain text scrambles
            equations.append(Equation(box, text, frozenset(i for i, _ in members)))
            taken |= {i for i, _ in members}
    # A line only partly in formulas keeps its text: nothing of it is lost.
    partial = {
        i
        for i in taken
        for eq in equations
        if i in eq.lines and not all(_in_some(g, equations) for g in lines[i].glyphs)
    }
    return [eq for eq in equations if not eq.lines & partial]


def _in_some(glyph: Glyph, equations: list[Equation]) -> bool:
    return any(eq.box.contains_center_of(glyph.box) for eq in equations)


def _is_math(line: TextLine) -> bool:
    """No prose (no known word of four letters or more, at most one of three) and no item
    number: a numbered exercise's formula is the exercise's text, next to its number."""
    if _LABEL.match(line.text.strip()):
        return False
    words = [w for w in _WORD.findall(line.text) if w.casefold() not in _FUNCTIONS]
    long_words = [w for w in words if len(w) >= 4 and is_word(w)]
    return not long_words and len(words) <= 1


def _is_display(members: list[tuple[int, Glyph]], box: Box, prose: list[Box]) -> bool:
    chars = [g.char for _, g in members]
    if len(chars) < _MIN_GLYPHS or not any(c in OPERATORS or c in _SIGNS for c in chars):
        return False
    if not any(c.isalpha() for c in chars):
        return False  # arithmetic on numbers alone: a table's or a list's, not a formula
    size = max(g.size for _, g in members)
    beside = Box(box.x0 - 1.5 * size, box.y0 + 0.2 * size, box.x1 + 1.5 * size, box.y1 - 0.2 * size)
    return not any(beside.overlap(other) > 0 for other in prose)


def _clusters(glyphs: list[Glyph]) -> list[list[int]]:
    """Glyphs joined when one is within reach of another: beside it on its row, or over it."""
    parent = list(range(len(glyphs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    order = sorted(range(len(glyphs)), key=lambda i: glyphs[i].box.x0)
    for n, i in enumerate(order):
        a = glyphs[i]
        for j in order[n + 1 :]:
            b = glyphs[j]
            reach = 1.2 * max(a.size, b.size)
            if b.box.x0 - a.box.x1 > reach:
                break
            if _near(a.box, b.box, reach):
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(glyphs)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _near(a: Box, b: Box, reach: float) -> bool:
    x_gap = max(a.x0, b.x0) - min(a.x1, b.x1)
    y_gap = max(a.y0, b.y0) - min(a.y1, b.y1)
    return x_gap <= reach and y_gap <= 0.25 * reach


def _bounds(boxes: list[Box]) -> Box:
    return Box(
        min(b.x0 for b in boxes),
        min(b.y0 for b in boxes),
        max(b.x1 for b in boxes),
        max(b.y1 for b in boxes),
    )
