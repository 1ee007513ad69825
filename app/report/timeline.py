"""What degeneration did to healthy attempts' timelines: the slowdown beside a loop.

Slowdown: on each endpoint (engine for CPU engines) that had degenerate attempts, the mean
duration of healthy attempts that overlapped a running degenerate attempt there, over the mean
duration of those that did not. None when either group is empty. (The batch's inflation is
estimated in `app.report.inflation`.)
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from statistics import fmean

from app.domain import AttemptStatus
from app.report.rows import AttemptRow

DEGENERATE = AttemptStatus.DEGENERATE.value
HEALTHY = AttemptStatus.OK.value


def submission_order(attempts: Sequence[AttemptRow]) -> list[AttemptRow]:
    return sorted(attempts, key=lambda a: (a.start, a.end, a.id))


@dataclass(frozen=True)
class HealthySplit:
    """Healthy durations on endpoints that saw degeneration, by overlap with a degenerate one."""

    with_degenerate: list[float]
    without_degenerate: list[float]

    @property
    def slowdown(self) -> float | None:
        if not self.with_degenerate or not self.without_degenerate:
            return None
        without = fmean(self.without_degenerate)
        return fmean(self.with_degenerate) / without if without > 0 else None


def split_healthy(attempts: Sequence[AttemptRow]) -> HealthySplit:
    with_: list[float] = []
    without: list[float] = []
    for resource, group in _loops_by_resource(attempts).items():
        split = _split(attempts, resource, _OverlapIndex(group))
        with_ += split.with_degenerate
        without += split.without_degenerate
    return HealthySplit(with_, without)


def _loops_by_resource(attempts: Sequence[AttemptRow]) -> dict[str, list[AttemptRow]]:
    loops: dict[str, list[AttemptRow]] = defaultdict(list)
    for a in attempts:
        if a.status == DEGENERATE:
            loops[a.resource].append(a)
    return loops


def _split(attempts: Sequence[AttemptRow], resource: str, loops: _OverlapIndex) -> HealthySplit:
    """Healthy durations on one resource, by overlap with one of its loops."""
    with_: list[float] = []
    without: list[float] = []
    for a in attempts:
        if a.status == HEALTHY and a.resource == resource:
            (with_ if loops.overlaps(a.start, a.end) else without).append(a.end - a.start)
    return HealthySplit(with_, without)


class _OverlapIndex:
    """Whether an interval overlaps any of a set of intervals, in O(log n) per question."""

    def __init__(self, intervals: Sequence[AttemptRow]) -> None:
        ordered = sorted(intervals, key=lambda a: a.start)
        self.starts = [a.start for a in ordered]
        self.max_end = list(accumulate((a.end for a in ordered), max))

    def overlaps(self, start: float, end: float) -> bool:
        # Among intervals starting before `end`, does one end after `start`?
        count = bisect_left(self.starts, end)
        return count > 0 and self.max_end[count - 1] > start
