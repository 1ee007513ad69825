"""One formula's glyphs, placed by size and baseline, written as LaTeX.

The glyphs of the formula's own size form its row; smaller ones are scripts of the row glyph
before them (raised: a superscript, lowered: a subscript) or limits of a big operator they sit
over or under; row-size glyphs well above and below the row, one group over another, are a
fraction. Each script, limit, numerator and denominator is read the same way, recursively.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.textlayer.model import Glyph

BIG_OPERATORS = {"∫": r"\int", "∬": r"\iint", "∮": r"\oint", "∑": r"\sum", "∏": r"\prod"}
_SYMBOLS = {
    "−": "-", "×": r"\times", "÷": r"\div", "±": r"\pm", "∓": r"\mp", "⋅": r"\cdot",
    "·": r"\cdot", "√": r"\surd", "∞": r"\infty", "∂": r"\partial", "∇": r"\nabla",
    "≤": r"\leq", "≥": r"\geq", "≠": r"\neq", "≈": r"\approx", "≡": r"\equiv", "∼": r"\sim",
    "∈": r"\in", "∉": r"\notin", "⊂": r"\subset", "⊆": r"\subseteq", "∪": r"\cup",
    "∩": r"\cap", "→": r"\rightarrow", "←": r"\leftarrow", "↦": r"\mapsto", "′": r"\prime",
    "{": r"\{", "}": r"\}", "%": r"\%", "#": r"\#", "&": r"\&", "_": r"\_", "$": r"\$",
    "\\": r"\backslash", "~": r"\sim", "^": r"\wedge",
}  # fmt: skip
_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "varepsilon", "ϵ": "epsilon",
    "ζ": "zeta", "η": "eta", "θ": "theta", "ϑ": "vartheta", "ι": "iota", "κ": "kappa",
    "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi", "π": "pi", "ρ": "rho", "σ": "sigma",
    "ς": "varsigma", "τ": "tau", "υ": "upsilon", "φ": "varphi", "ϕ": "phi", "χ": "chi",
    "ψ": "psi", "ω": "omega", "Γ": "Gamma", "Δ": "Delta", "Θ": "Theta", "Λ": "Lambda",
    "Ξ": "Xi", "Π": "Pi", "Σ": "Sigma", "Υ": "Upsilon", "Φ": "Phi", "Ψ": "Psi", "Ω": "Omega",
}  # fmt: skip
OPERATORS = frozenset({*BIG_OPERATORS, "=", "+", "<", ">", *_SYMBOLS} - set("{}%#&_$\\~^′"))
_COMMAND_END = re.compile(r"\\[A-Za-z]+$")
_ROW_SIZE = 0.85  # glyphs this share of the formula's size or more are on its row
_OFF_ROW = 0.3  # a row-size glyph whose baseline is this share of the size off the row's
_SCRIPT_SHIFT = 0.08  # a script's baseline this share of the size above or below its base's


@dataclass
class _Atom:
    """A row element: a glyph (or a fraction) with what is attached to it."""

    x0: float
    x1: float
    text: str
    baseline: float
    glyph: Glyph | None = None
    subscript: list[Glyph] = field(default_factory=list)
    superscript: list[Glyph] = field(default_factory=list)


def latex(glyphs: Sequence[Glyph]) -> str:
    """LaTeX for a formula's glyphs; empty when they hold nothing to write."""
    return _expression(list(glyphs))


def _expression(glyphs: list[Glyph]) -> str:
    if not glyphs:
        return ""
    size = _formula_size(glyphs)
    row_glyphs = [g for g in glyphs if g.size >= _ROW_SIZE * size]
    baseline = _row_baseline(row_glyphs, size)
    on_row = [g for g in row_glyphs if _on_row(g, baseline, size)]
    off_row = [g for g in row_glyphs if not _on_row(g, baseline, size)]
    off_ids = {id(g) for g in off_row}
    atoms, rest = _fractions(off_row, [g for g in glyphs if id(g) not in off_ids], baseline, size)
    row_ids = {id(g) for g in on_row}
    atoms += [_glyph_atom(g) for g in rest if id(g) in row_ids]
    atoms.sort(key=lambda atom: atom.x0)
    for run in _script_runs([g for g in rest if id(g) not in row_ids], size):
        _attach(run, atoms, baseline, size)
    return _render_row(atoms)


def _formula_size(glyphs: list[Glyph]) -> float:
    """The size most glyphs are set in (big operators and delimiters are larger)."""
    sizes = Counter(round(g.size, 1) for g in glyphs if g.char not in BIG_OPERATORS)
    if not sizes:
        return max(g.size for g in glyphs)
    largest = max(sizes)
    common = [s for s, _ in sizes.most_common() if s >= 0.8 * largest]
    return common[0] if common else largest


def _row_baseline(glyphs: list[Glyph], size: float) -> float:
    """The baseline the row runs on: of the baselines row glyphs share, the one that reaches
    furthest across the formula (a numerator or denominator is as wide as its fraction only;
    big operators sit off it)."""
    plain = [g for g in glyphs if g.char not in BIG_OPERATORS] or glyphs
    step = 0.1 * size
    levels = {round(g.baseline / step) for g in plain}

    def reach(level: int) -> tuple[float, int]:
        near = [g for g in plain if abs(round(g.baseline / step) - level) <= 1]
        return max(g.box.x1 for g in near) - min(g.box.x0 for g in near), len(near)

    level = max(sorted(levels), key=reach)
    near = [g.baseline for g in plain if abs(round(g.baseline / step) - level) <= 1]
    return sum(near) / len(near)


def _on_row(glyph: Glyph, baseline: float, size: float) -> bool:
    if glyph.char in BIG_OPERATORS:
        return True
    return abs(glyph.baseline - baseline) <= _OFF_ROW * size


def _fractions(
    off_row: list[Glyph], others: list[Glyph], baseline: float, size: float
) -> tuple[list[_Atom], list[Glyph]]:
    """Fractions from row-size glyphs above and below the row; the glyphs left over."""
    above = _runs([g for g in off_row if g.baseline < baseline], size)
    below = _runs([g for g in off_row if g.baseline > baseline], size)
    atoms: list[_Atom] = []
    used: set[int] = set()
    for numerator in above:
        x0, x1 = min(g.box.x0 for g in numerator), max(g.box.x1 for g in numerator)
        partner = max(below, key=lambda run: _overlap(run, x0, x1), default=None)
        if partner is None or _overlap(partner, x0, x1) <= 0:
            continue
        below.remove(partner)
        left = min(x0, min(g.box.x0 for g in partner))
        right = max(x1, max(g.box.x1 for g in partner))
        axis = (max(g.box.y1 for g in numerator) + min(g.box.y0 for g in partner)) / 2
        parts = [*numerator, *partner]
        inside = [*parts, *(g for g in others if _inside(g, parts, left, right, size))]
        if any(g.char in BIG_OPERATORS for g in inside):
            continue
        top = [g for g in inside if (g.box.y0 + g.box.y1) / 2 < axis]
        bottom = [g for g in inside if (g.box.y0 + g.box.y1) / 2 >= axis]
        text = rf"\frac{{{_expression(top)}}}{{{_expression(bottom)}}}"
        atoms.append(_Atom(left, right, text, baseline))
        used |= {id(g) for g in inside}
    atoms += [_glyph_atom(g) for g in off_row if id(g) not in used]  # unpaired: on the row
    return atoms, [g for g in others if id(g) not in used]


def _inside(glyph: Glyph, parts: list[Glyph], left: float, right: float, size: float) -> bool:
    """Whether a glyph belongs to the fraction `parts` make: under its span, or a script just
    past its end (the `2` of a denominator's `t^2`), level with a numerator or denominator."""
    if left <= _centre(glyph) <= right:
        return True
    if glyph.size >= _ROW_SIZE * size or not right <= glyph.box.x0 <= right + 0.3 * size:
        return False
    middle = (glyph.box.y0 + glyph.box.y1) / 2
    return any(part.box.y0 - 0.3 * size <= middle <= part.box.y1 for part in parts)


def _runs(glyphs: list[Glyph], size: float) -> list[list[Glyph]]:
    """Glyphs grouped left to right where the gap between them is under half the size."""
    runs: list[list[Glyph]] = []
    for glyph in sorted(glyphs, key=lambda g: g.box.x0):
        if runs and glyph.box.x0 - max(g.box.x1 for g in runs[-1]) <= 0.5 * size:
            runs[-1].append(glyph)
        else:
            runs.append([glyph])
    return runs


def _overlap(run: list[Glyph], x0: float, x1: float) -> float:
    return min(x1, max(g.box.x1 for g in run)) - max(x0, min(g.box.x0 for g in run))


def _centre(glyph: Glyph) -> float:
    return (glyph.box.x0 + glyph.box.x1) / 2


def _glyph_atom(glyph: Glyph) -> _Atom:
    return _Atom(glyph.box.x0, glyph.box.x1, _token(glyph), glyph.baseline, glyph)


def _script_runs(glyphs: list[Glyph], size: float) -> list[list[Glyph]]:
    """Small glyphs grouped left to right into scripts: close, and on one baseline or smaller
    still (a script's own script: the `i` of `x_i` inside an exponent)."""
    runs: list[list[Glyph]] = []
    for glyph in sorted(glyphs, key=lambda g: g.box.x0):
        run = runs[-1] if runs else []
        close = bool(run) and glyph.box.x0 - max(g.box.x1 for g in run) <= 0.3 * size
        level = any(abs(glyph.baseline - g.baseline) <= 0.25 * g.size for g in run)
        if close and (level or glyph.size < _ROW_SIZE * max(g.size for g in run)):
            run.append(glyph)
        else:
            runs.append([glyph])
    return runs


def _attach(run: list[Glyph], atoms: list[_Atom], baseline: float, size: float) -> None:
    """A run of small glyphs becomes a limit of the big operator it sits over or under, else a
    script of the row element before it: raised or lowered, or on the row as it is."""
    x0, x1 = min(g.box.x0 for g in run), max(g.box.x1 for g in run)
    lead = max(run, key=lambda g: (g.size, -g.box.x0))
    for atom in atoms:
        if atom.glyph is None or atom.glyph.char not in BIG_OPERATORS:
            continue
        if min(x1, atom.x1 + 0.3 * size) > max(x0, atom.x0 - 0.3 * size):
            middle = (atom.glyph.box.y0 + atom.glyph.box.y1) / 2
            above = (lead.box.y0 + lead.box.y1) / 2 < middle
            (atom.superscript if above else atom.subscript).extend(run)
            return
    before = [atom for atom in atoms if atom.x0 <= x0]
    shift = lead.baseline - (before[-1].baseline if before else baseline)
    if before and shift < -_SCRIPT_SHIFT * size:
        before[-1].superscript.extend(run)
    elif before and shift > _SCRIPT_SHIFT * size:
        before[-1].subscript.extend(run)
    else:
        atoms.extend(_glyph_atom(g) for g in run)
        atoms.sort(key=lambda atom: atom.x0)


def _render_row(atoms: list[_Atom]) -> str:
    parts = []
    for atom in atoms:
        text = atom.text
        if atom.subscript:
            text += f"_{{{_expression(atom.subscript)}}}"
        if atom.superscript:
            text += f"^{{{_expression(atom.superscript)}}}"
        parts.append(text)
    written = ""
    for part in parts:  # spaced only where a command would run into a letter: `\\pi x`
        written += " " + part if _COMMAND_END.search(written) and part[:1].isalpha() else part
    return written


def _token(glyph: Glyph) -> str:
    char = glyph.char
    if char in BIG_OPERATORS:
        return BIG_OPERATORS[char]
    if char in _GREEK:
        return "\\" + _GREEK[char]
    if char in _SYMBOLS:
        return _SYMBOLS[char]
    if glyph.bold and char.isalnum():
        return rf"\mathbf{{{char}}}"
    return char
