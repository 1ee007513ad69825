"""Segments of the structural view (lines, sentences) and how two of them compare.

A copy that comes back in a loop may differ from the one before in one place, by at most a
word (a counter, a translated word): `near_repeat` allows that, `starts_like` does the same
for a copy still being written.
"""

from dataclasses import dataclass

# Characters one changed word may differ by (`水位` / `niveau`, `water` / `Wasser`).
WORD_CHARS = 6
# Characters of a cut third copy too few to hold more than its first (maybe changed) word.
BARELY_STARTED = 12


@dataclass(slots=True)
class Segment:
    key: str  # what is compared: the shape view, or the raw row of a diagram
    line: str  # the raw line, to tell exact repeats from drifting ones (`exact_view`)
    start: int  # raw offsets
    end: int
    diagram: bool
    counted_key: str | None = None  # the key with number words read as numbers, when asked


def is_row(key: str) -> bool:
    return key.startswith("|") or key.startswith("<tr") or key.startswith("<td")


def only_table_rows(unit: str) -> bool:
    """Whether a raw unit (a rotation of one copy) is made of Markdown table rows only."""
    lines = [line.strip() for line in unit.replace("\\n", "\n").split("\n") if line.strip()]
    return bool(lines) and "|" in lines[0] and all(is_row(line) for line in lines[1:])


def starts_like(expected: Segment, partial: str) -> bool:
    """Whether a partial segment is the start of `expected`, up to one small change."""
    head = expected.key[: len(partial)]
    if head == partial or expected.diagram:
        return head == partial
    if near_repeat(head, partial, 0):
        return True
    # One word changed its length (`数据` / `data`): same start, and the end read so far
    # occurs in the expected segment.
    # (A CJK word may change from the third character on: two characters are a word.)
    return len(partial) >= 12 and partial[:2] == head[:2] and partial[-6:] in expected.key


def near_repeat(first: str, second: str, min_chars: int) -> bool:
    """Two keys that differ in one place only, by at most a word (or a sixth of them)."""
    size = max(len(first), len(second))
    allowed = max(WORD_CHARS, size // 6)
    if min(len(first), len(second)) < min_chars or abs(len(first) - len(second)) > allowed:
        return False
    if first[:4] != second[:4] and first[-4:] != second[-4:]:
        return False
    prefix = _common_prefix(first, second)
    suffix = _common_prefix(first[prefix:][::-1], second[prefix:][::-1])
    return size - prefix - suffix <= allowed


def _common_prefix(first: str, second: str) -> int:
    low, high = 0, min(len(first), len(second))
    while low < high:  # bisection on C-level slice comparisons
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
