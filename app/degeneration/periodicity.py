"""Periodicity tests on strings using C-level slice comparisons.

A string `s[e-L:e]` has period `p` iff `s[e-L:e-p] == s[e-L+p:e]`; comparing two slices runs
at memcmp speed, so the detectors never loop over characters in Python.
"""

from collections.abc import Iterator


def is_periodic(buffer: str, end: int, period: int, length: int) -> bool:
    """Whether the `length` characters ending at `end` repeat with `period`."""
    if length > end or period >= length:
        return False
    start = end - length
    return buffer[start : end - period] == buffer[start + period : end]


def periodic_run(buffer: str, end: int, period: int, known: int = 0) -> int:
    """Length of the longest suffix of `buffer[:end]` with the given period.

    `known` is a length already known to be periodic; the search doubles from there, then
    bisects, so the cost is O(run * log(run)) in C-level comparisons.
    """
    low = max(known, min(period, end))
    high = low
    while high < end:
        high = min(end, max(2 * high, period + 1))
        if not is_periodic(buffer, end, period, high):
            break
        low = high
    else:
        return low
    while high - low > 1:
        middle = (low + high) // 2
        if is_periodic(buffer, end, period, middle):
            low = middle
        else:
            high = middle
    return low


def candidate_periods(
    buffer: str, end: int, anchor_chars: int, max_period: int, limit: int
) -> Iterator[int]:
    """Shifts at which the last `anchor_chars` characters occurred before, nearest first.

    In a loop the tail re-occurs exactly one period earlier, so these shifts are the only
    periods worth testing; in healthy prose the anchor rarely re-occurs at all.
    """
    anchor_start = end - anchor_chars
    if anchor_start <= 0:
        return
    anchor = buffer[anchor_start:end]
    lowest = max(0, anchor_start - max_period)
    search_end = end - 1
    for _ in range(limit):
        found = buffer.rfind(anchor, lowest, search_end)
        if found < 0:
            return
        yield anchor_start - found
        search_end = found + anchor_chars - 1


def char_run_length(buffer: str, end: int, limit: int) -> int:
    """Length (capped at `limit`) of the run of one character ending at `end`."""
    if end == 0:
        return 0
    window = buffer[max(0, end - limit) : end]
    return len(window) - len(window.rstrip(window[-1]))
