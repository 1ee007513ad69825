"""What a transcription is worth against a reference: CER, word F1 and table rows found.

Linear-time enough for whole documents: the edit distance is Hyyrö's bit-parallel form of
Myers' algorithm (one pass over the text, the pattern's columns as bits of one integer), so a
20,000-character page costs a fraction of a second rather than minutes.
"""

from __future__ import annotations

import html
import re
from collections import Counter

from app.textmatch import word_f1

__all__ = ["cer", "rows_found", "table_rows", "word_f1"]

_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.DOTALL | re.IGNORECASE)
_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
# a delimiter row: one hyphen a cell is enough (GFM; docling writes "| - | - |")
_SEPARATOR = re.compile(r"^\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*$")
_LEADERS = re.compile(r"(?:\. ?){4,}")  # leader dots: ". . . ." or "...."
ROW_COVER = 0.8  # a reference row is found when one candidate row holds this share of its cells


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance between `a` and `b`."""
    if not a or not b:
        return len(a) + len(b)
    full = (1 << len(a)) - 1
    top = 1 << (len(a) - 1)
    masks: dict[str, int] = {}
    for i, char in enumerate(a):
        masks[char] = masks.get(char, 0) | (1 << i)
    plus, minus, score = full, 0, len(a)
    for char in b:
        eq = masks.get(char, 0)
        xv = eq | minus
        xh = (((eq & plus) + plus) ^ plus) | eq
        ph = minus | (~(xh | plus) & full)
        mh = plus & xh
        if ph & top:
            score += 1
        elif mh & top:
            score -= 1
        ph = ((ph << 1) | 1) & full
        mh = (mh << 1) & full
        plus = mh | (~(xv | ph) & full)
        minus = ph & xv
    return score


def cer(hypothesis: str, reference: str) -> float:
    """Edits per reference character, whitespace runs collapsed."""
    ref, hyp = " ".join(reference.split()), " ".join(hypothesis.split())
    return edit_distance(hyp, ref) / max(1, len(ref))


def table_rows(text: str, contents: bool = True) -> list[list[str]]:
    """The rows of every table in `text`, Markdown pipes or HTML, as normalised cell texts;
    without the tables of contents written as tables where `contents` is False."""
    rows = [row for table in _tables(text) if contents or not _is_contents(table) for row in table]
    for row in _ROW.findall(text):
        rows.append([_cell(html.unescape(_TAG.sub(" ", c))) for c in _CELL.findall(row)])
    return [cells for cells in ([c for c in row if c] for row in rows) if cells]


def _tables(text: str) -> list[list[list[str]]]:
    """Markdown tables: runs of pipe rows, delimiter rows left out."""
    tables: list[list[list[str]]] = [[]]
    for line in text.splitlines():
        line = line.strip()
        if not (line.startswith("|") and line.endswith("|")):
            if tables[-1]:
                tables.append([])
        elif not _SEPARATOR.match(line):
            tables[-1].append([_cell(c) for c in re.split(r"(?<!\\)\|", line[1:-1])])
    return [table for table in tables if table]


def _is_contents(table: list[list[str]]) -> bool:
    """A table of contents: most rows lead with dots to a page number (". . . . 14")."""
    dotted = sum(any(_LEADERS.search(cell) for cell in row) for row in table)
    return dotted > len(table) / 2


def rows_found(candidate: str, reference: str, contents: bool = True) -> tuple[int, int]:
    """Reference table rows that some candidate table row holds (`ROW_COVER` of their cells),
    and how many reference rows there are; `contents=False` leaves out the reference's tables
    of contents written as tables (a convention a reader writing them as lines cannot meet)."""
    wanted = table_rows(reference, contents)
    have = [Counter(row) for row in table_rows(candidate)]
    found = 0
    for row in wanted:
        need = Counter(row)
        if any(sum((need & cells).values()) >= ROW_COVER * len(row) for cells in have):
            found += 1
    return found, len(wanted)


def _cell(text: str) -> str:
    return " ".join(text.replace("**", "").split()).casefold()
