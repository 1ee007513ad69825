"""Formulas inside a sentence, marked by TeX's math fonts, written as LaTeX (`$...$`).

A LaTeX paper sets a formula in a sentence ("Then λg = λg′.") in math fonts (CMMI, CMSY, CMR
beside a text font, PazoMath) with its scripts small and shifted; read as text it loses its
structure ("λg = λg′" for `\\lambda_{g}=\\lambda_{g'}`). A line's words (glyphs parted by gaps)
are formula words when they hold a glyph in a math font other than the line's own font, or a
script on a variable of one or two letters; a short italic word beside a formula word ("u" in
"u ∈ R") belongs to it. Runs of formula words with a relation, an operator or a script become
`$...$` (written by `formula.latex`); everything else stays as the line has it. Pages without
math fonts (most) never get here: their lines carry no glyphs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from app.textlayer.formula import OPERATORS, latex
from app.textlayer.model import Box, Glyph, TextLine

_MATH_FONT = re.compile(r"CM(MI|SY|EX|R|BX|BSY)|Math|Symbol|MSAM|MSBM|rsfs|EUF|Euler", re.I)
_ITALIC = re.compile(r"Ital|Oblique|CMMI", re.I)
_WORD_GAP = 0.2  # of the line's size: a wider gap between glyphs parts two words
_SCRIPT = 0.85  # glyphs under this share of the line's size are scripts
_TRAILING = ".,;:"
_END_OF_PROOF = "□■∎"


def rows(lines: Sequence[TextLine]) -> list[TextLine]:
    """A block's lines with the ones that share a row merged: MuPDF splits a formula's row
    where a limit or a script sits (`λg = ∑k` over `i=1 c(g, R)`)."""
    merged: list[TextLine] = []
    for line in lines:
        last = merged[-1] if merged else None
        if last is not None and shares_formula_row(last, line):
            glyphs = tuple(sorted((*last.glyphs, *line.glyphs), key=lambda g: g.box.x0))
            box = Box(
                min(last.box.x0, line.box.x0),
                min(last.box.y0, line.box.y0),
                max(last.box.x1, line.box.x1),
                max(last.box.y1, line.box.y1),
            )
            text = " ".join(sorted((last, line), key=lambda ln: ln.box.x0)[i].text for i in (0, 1))
            merged[-1] = replace(last, text=text, box=box, glyphs=glyphs)
        else:
            merged.append(line)
    return merged


def shares_formula_row(a: TextLine, b: TextLine) -> bool:
    """Whether two lines, one of them with a formula's glyphs (a math font, a script), are one
    row of text (a drop cap beside its paragraph is not: it has neither)."""
    if not (a.glyphs and b.glyphs) or not (_has_formula_glyphs(a) or _has_formula_glyphs(b)):
        return False
    overlap = min(a.box.y1, b.box.y1) - max(a.box.y0, b.box.y0)
    return overlap > 0.5 * min(a.box.height, b.box.height)


def _has_formula_glyphs(line: TextLine) -> bool:
    font = Counter(g.font for g in line.glyphs).most_common(1)[0][0]
    size = _common_size(line.glyphs)
    return any(
        (g.font != font and _MATH_FONT.search(g.font)) or g.size < _SCRIPT * size
        for g in line.glyphs
    )


def inline_text(line: TextLine) -> str:
    """The line's text with its formulas as `$...$`; the line's own text when it has none."""
    if not line.glyphs:
        return line.text
    words = _words(line.glyphs)
    size = _common_size(line.glyphs)
    font = Counter(g.font for g in line.glyphs).most_common(1)[0][0]
    strong = [_is_formula(word, size, font) for word in words]
    marked = [
        strong[i]
        or (_is_variable(word) and any(strong[j] for j in (i - 1, i + 1) if 0 <= j < len(words)))
        for i, word in enumerate(words)
    ]
    pieces: list[str] = []
    found = False
    i = 0
    while i < len(words):
        if not marked[i]:
            pieces.append(_text(words[i]))
            i += 1
            continue
        end = i
        while end < len(words) and marked[end]:
            end += 1
        run = [g for word in words[i:end] for g in word]
        tail: list[Glyph] = []
        while run and (
            run[-1].char in _END_OF_PROOF
            or (run[-1].char in _TRAILING and not _MATH_FONT.search(run[-1].font))
        ):
            tail.insert(0, run.pop())
        if _is_formula_run(run, size):
            pieces.append(f"${latex(run)}$" + "".join(g.char for g in tail))
            found = True
        else:
            pieces.extend(_text(word) for word in words[i:end])
        i = end
    return " ".join(pieces) if found else line.text


def _words(glyphs: Sequence[Glyph]) -> list[list[Glyph]]:
    size = _common_size(glyphs)
    words: list[list[Glyph]] = []
    for glyph in glyphs:
        if words and glyph.box.x0 - words[-1][-1].box.x1 <= _WORD_GAP * size:
            words[-1].append(glyph)
        else:
            words.append([glyph])
    return words


def _is_formula(word: list[Glyph], size: float, font: str) -> bool:
    if any(g.font != font and _MATH_FONT.search(g.font) for g in word):
        return True
    full = [g for g in word if g.size >= _SCRIPT * size]
    scripts = len(full) < len(word)
    return scripts and sum(g.char.isalpha() for g in full) in (1, 2) and len(full) <= 3


def _is_variable(word: list[Glyph]) -> bool:
    """An italic word of one or two letters: a variable, as "u" in "u ∈ R"."""
    return len(word) <= 2 and all(g.char.isalpha() and _ITALIC.search(g.font) for g in word)


def _is_formula_run(run: list[Glyph], size: float) -> bool:
    if len(run) < 2 or not any(g.char.isalnum() for g in run):
        return False
    signs = any(g.char in OPERATORS for g in run)
    return signs or any(g.size < _SCRIPT * size for g in run)


def _text(word: list[Glyph]) -> str:
    return "".join(g.char for g in word)


def _common_size(glyphs: Sequence[Glyph]) -> float:
    return Counter(g.size for g in glyphs).most_common(1)[0][0]
