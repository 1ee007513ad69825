"""Where each word of a page's kept text goes: aligned with the words another reader found on
the page, each with its box (Tesseract's, or the kept reading's own).

The two word lists are aligned on their matching keys (`difflib`, longest common runs first).
A kept word equal to a found word takes its box. A run of kept words facing a run of other
found words (the model read them otherwise) takes those words' boxes: one to one where the
counts agree, so a word the model read right and Tesseract wrong still lands where Tesseract
saw a word; else spread over the run's lines by length. Kept words left over are matched with
found words left over anywhere on the page (a block read in another order), and the rest put
in the room on the line after the word before them. Pure: boxes in, boxes out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher

from app.positions.model import Box
from app.searchable.words import Token, is_unspaced, matching_key, split_unspaced

# the lines of words laid in strips of their own, on no found line: below the line before
# them, or above the line after them
_BELOW, _ABOVE = -1, -2
_CHAR = 0.5  # a character's width in a strip, in the strip's heights


@dataclass(frozen=True)
class FoundWord:
    """A word another reader found, its box in points (top-left origin) and its line."""

    text: str
    box: Box
    line: int


@dataclass(frozen=True)
class PlacedWord:
    """A kept word and the box it is written over; `line` names the found line it sits on."""

    token: Token
    box: Box
    line: int


def split_found(words: Sequence[FoundWord]) -> list[FoundWord]:
    """Found words cut as `words.tokens` cuts the kept text (a run of CJK characters read as
    one word becomes one word per character), each part given its share of the box."""
    cut: list[FoundWord] = []
    for word in words:
        parts = split_unspaced(word.text)
        if len(parts) == 1 or not any(is_unspaced(p[0]) for p in parts):
            cut.append(word)
            continue
        x0, y0, x1, y1 = word.box
        step, at = (x1 - x0) / len(word.text), x0
        for part in parts:
            cut.append(FoundWord(part, (at, y0, at + step * len(part), y1), word.line))
            at += step * len(part)
    return cut


def _union(boxes: Sequence[Box]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def line_boxes(found: Sequence[FoundWord]) -> dict[int, Box]:
    grouped: dict[int, list[Box]] = {}
    for word in found:
        grouped.setdefault(word.line, []).append(word.box)
    return {line: _union(boxes) for line, boxes in grouped.items()}


def spread(tokens: Sequence[Token], box: Box, line: int) -> list[PlacedWord]:
    """Tokens laid across `box` left to right, each as wide as its share of the characters
    (a space's worth between words)."""
    weights = [len(t.text) + (0 if t.joined or i == 0 else 1) for i, t in enumerate(tokens)]
    total = sum(weights) or 1
    x0, y0, x1, y1 = box
    unit, at, placed = (x1 - x0) / total, x0, []
    for token, weight in zip(tokens, weights, strict=True):
        start = at + unit * (weight - len(token.text))
        at += unit * weight
        placed.append(PlacedWord(token, (start, y0, at, y1), line))
    return placed


def _segments(found: Sequence[FoundWord]) -> list[tuple[Box, int, int]]:
    """Consecutive found words grouped by line: (box, line, characters)."""
    groups: list[list[FoundWord]] = []
    for word in found:
        if groups and groups[-1][-1].line == word.line:
            groups[-1].append(word)
        else:
            groups.append([word])
    return [(_union([w.box for w in g]), g[0].line, sum(len(w.text) for w in g)) for g in groups]


def _over(tokens: Sequence[Token], found: Sequence[FoundWord]) -> list[PlacedWord]:
    """Kept tokens laid over found words that read otherwise."""
    if len(tokens) == len(found):
        return [PlacedWord(t, w.box, w.line) for t, w in zip(tokens, found, strict=True)]
    segments = _segments(found)
    total = sum(chars for _, _, chars in segments) or 1
    lengths = [len(t.text) + 1 for t in tokens]
    whole = sum(lengths)
    placed: list[PlacedWord] = []
    start, done = 0, 0
    seen = 0
    for index, (box, line, chars) in enumerate(segments):
        seen += chars
        end = len(tokens) if index == len(segments) - 1 else start
        while end < len(tokens) and (done + lengths[end] / 2) / whole <= seen / total:
            done += lengths[end]
            end += 1
        if end > start:
            placed += spread(tokens[start:end], box, line)
        start = end
    return placed


def _room_after(
    last: PlacedWord | None,
    following: PlacedWord | None,
    lines: dict[int, Box],
    count: int,
    width: float | None = None,
) -> tuple[Box, int] | None:
    """Where kept words with no found word facing them go: after the word before them, up to
    the next placed word on that line (never over it) or the line's end (at least a strip
    half the line's height a word wide). Where that strip would run past the page's edge
    (`width`), a strip as wide as the line under it (over it, for words before the page's
    first found word): squeezed at the edge, their glyphs would overlap and a reader would
    copy them out as one word."""
    if last is None and following is None:
        return None
    if last is None:
        assert following is not None
        line, (lx0, y0, lx1, y1) = following.line, lines.get(following.line, following.box)
        x1 = following.box[0]
        x0 = lx0 if following.box[0] - lx0 > 0 else x1 - (y1 - y0) * 0.5 * count
        if width is not None and x0 < 0:
            return (lx0, y0 - 1.2 * (y1 - y0), max(lx1, width - lx0), y0 - 0.2 * (y1 - y0)), _ABOVE
        return (min(x0, x1 - 1.0), y0, x1, y1), line
    line, (lx0, y0, lx1, y1) = last.line, lines.get(last.line, last.box)
    x0 = last.box[2]
    beside = following is not None and following.line == line and following.box[0] > x0
    x1 = following.box[0] if following is not None and beside else lx1
    narrow = (y1 - y0) * 0.5 * count
    if x1 - x0 < (1.0 if beside else narrow):  # a gap before the next word is kept to
        x1 = x0 + narrow
    if width is not None and x1 > width:
        return (lx0, y1 + 0.2 * (y1 - y0), max(lx1, width - lx0), y1 + 1.2 * (y1 - y0)), _BELOW
    return (x0, y0, x1, y1), line


def _elsewhere(
    tokens: Sequence[Token],
    slots: list[PlacedWord | None],
    found: Sequence[FoundWord],
    spare: list[int],
) -> None:
    """Kept words left unplaced, matched with found words left unused wherever they are on
    the page: a block the two readers read in another order (a figure's labels, a column)."""
    open_slots = [i for i, slot in enumerate(slots) if slot is None]
    kept = [matching_key(tokens[i].text) for i in open_slots]
    other = [matching_key(found[j].text) for j in spare]
    matcher = SequenceMatcher(None, kept, other, autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        if size >= 2 or (size == 1 and len(kept[a]) >= 5):  # not a lone "the" anywhere
            for k in range(size):
                word = found[spare[b + k]]
                slots[open_slots[a + k]] = PlacedWord(
                    tokens[open_slots[a + k]], word.box, word.line
                )


def _fill_rooms(
    tokens: Sequence[Token],
    slots: list[PlacedWord | None],
    lines: dict[int, Box],
    width: float | None,
) -> None:
    """Each run of kept words still unplaced spread after the word before it."""
    index = 0
    while index < len(slots):
        if slots[index] is not None:
            index += 1
            continue
        end = index
        while end < len(slots) and slots[end] is None:
            end += 1
        last = slots[index - 1] if index else None
        following = slots[end] if end < len(slots) else None
        room = _room_after(last, following, lines, end - index, width)
        if room is not None:
            laid = (
                spread(tokens[index:end], *room)
                if room[1] >= 0
                else _strips(tokens[index:end], room[0], upward=room[1] == _ABOVE)
            )
            slots[index:end] = laid
        index = end


def _strips(tokens: Sequence[Token], first: Box, upward: bool) -> list[PlacedWord]:
    """`tokens` across strips as wide and tall as `first`, each after the one before it
    (below, or above where `upward`), a character `_CHAR` strip heights wide."""
    x0, y0, x1, y1 = first
    height = y1 - y0
    fits = max(int((x1 - x0) / (_CHAR * height)), 1)  # characters a strip holds
    placed: list[PlacedWord] = []
    chunks: list[list[Token]] = [[]]
    used = 0
    for token in tokens:
        size = len(token.text) + 1
        if chunks[-1] and used + size > fits:
            chunks.append([])
            used = 0
        chunks[-1].append(token)
        used += size
    step = -1.2 * height if upward else 1.2 * height
    if upward:  # the last strip nearest the line: the first strip highest
        y0 += step * (len(chunks) - 1)
    for chunk in chunks:
        width = min(x1 - x0, sum(len(t.text) + 1 for t in chunk) * _CHAR * height)
        placed += spread(chunk, (x0, y0, x0 + width, y0 + height), _BELOW)
        y0 -= step if upward else -step
    return placed


def place(
    tokens: Sequence[Token], found: Sequence[FoundWord], width: float | None = None
) -> list[PlacedWord]:
    """Every kept token with a box, in the kept order; none where nothing was found; `width`:
    the page's, which no room for unfound words runs past."""
    found = split_found(found)
    if not found:
        return []
    keys_kept = [matching_key(t.text) for t in tokens]
    keys_found = [matching_key(w.text) for w in found]
    matcher = SequenceMatcher(None, keys_kept, keys_found, autojunk=False)
    slots: list[PlacedWord | None] = [None] * len(tokens)
    spare: list[int] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                slots[i] = PlacedWord(tokens[i], found[j].box, found[j].line)
        elif op == "replace" and (i2 - i1) * 3 >= (j2 - j1) and (j2 - j1) * 3 >= (i2 - i1):
            slots[i1:i2] = _over(tokens[i1:i2], found[j1:j2])
        else:  # words one reader has and the other has not here: perhaps elsewhere
            spare += range(j1, j2)
    _elsewhere(tokens, slots, found, spare)
    _fill_rooms(tokens, slots, line_boxes(found), width)
    return [slot for slot in slots if slot is not None]


def _inside(low: float, high: float, limit: float) -> tuple[float, float]:
    """`low`..`high` moved (and cut, where longer) to lie within 0..`limit`."""
    width = min(high - low, limit)
    low = min(max(low, 0.0), limit - width)
    return low, low + width


def on_page(placed: Sequence[PlacedWord], size: tuple[float, float]) -> list[PlacedWord]:
    """Each placed word moved onto the page where its room ran past an edge (a kept word with
    no found word before it, spread left of the page's first found word): a reader keeps only
    the text it finds on the page, so a word off it would be lost to a copy."""
    width, height = size
    moved = []
    for word in placed:
        x0, x1 = _inside(word.box[0], word.box[2], width)
        y0, y1 = _inside(word.box[1], word.box[3], height)
        moved.append(replace(word, box=(x0, y0, x1, y1)))
    return moved
