"""What degeneration did to the batch's timeline: wall-clock inflation and healthy slowdown.

Inflation (after DharmaOCR's method): how much longer the batch took than it would have with
every degenerate attempt lasting the mean healthy duration. The attempt timeline is replayed on
its lanes: attempts are laid, in order of start, on the lane (a worker slot) that fell free
latest before they started, opening a new lane when none is free. In the counterfactual a
degenerate attempt longer than the mean healthy duration of its model (of all models when its
own has no healthy attempt) is cut to that mean, and every later attempt of its lane moves
earlier by the time saved; gaps between attempts (rendering, queueing) are kept, and nothing
moves across lanes. A loop also slows what shares its GPU (it holds batch slots and KV cache),
so a healthy attempt that overlapped a degenerate one on the same endpoint is sped up by that
endpoint's measured slowdown (below) when it is above 1, and its lane moves earlier likewise.
Then

    inflation_estimate = (wall - counterfactual_wall) / counterfactual_wall

with wall the span from the first attempt's start to the last one's end. Without degenerate
attempts it is 0; without any healthy attempt it is unknown (None).

Slowdown: on each endpoint (engine for CPU engines) that had degenerate attempts, the mean
duration of healthy attempts that overlapped a running degenerate attempt there, over the mean
duration of those that did not. None when either group is empty.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from statistics import fmean

from app.domain import AttemptStatus
from app.report.rows import AttemptRow

INFLATION_METHOD = (
    "Lane replay: attempts are laid on worker lanes in start order; each degenerate attempt "
    "longer than its model's mean healthy duration is cut to that mean and later attempts on "
    "its lane move earlier by the time saved (gaps kept, nothing moves across lanes); healthy "
    "attempts that overlapped a loop on their endpoint are sped up by that endpoint's measured "
    "healthy slowdown. inflation_estimate = (wall_seconds - counterfactual_wall_seconds) / "
    "counterfactual_wall_seconds."
)

DEGENERATE = AttemptStatus.DEGENERATE.value
HEALTHY = AttemptStatus.OK.value


def submission_order(attempts: Sequence[AttemptRow]) -> list[AttemptRow]:
    return sorted(attempts, key=lambda a: (a.start, a.end, a.id))


def wall_seconds(attempts: Sequence[AttemptRow]) -> float:
    if not attempts:
        return 0.0
    return max(a.end for a in attempts) - min(a.start for a in attempts)


def lanes(attempts: Sequence[AttemptRow]) -> list[list[AttemptRow]]:
    """The attempts split into sequential lanes, each attempt on the latest-freed free lane."""
    found: list[list[AttemptRow]] = []
    free_at: list[tuple[float, int]] = []  # (end of the lane's last attempt, lane), sorted
    for a in submission_order(attempts):
        i = bisect_right(free_at, (a.start, math.inf))
        if i:
            lane = free_at.pop(i - 1)[1]
        else:
            lane = len(found)
            found.append([])
        found[lane].append(a)
        insort(free_at, (a.end, lane))
    return found


def healthy_means(
    attempts: Sequence[AttemptRow],
) -> tuple[dict[tuple[str, str | None], float], float | None]:
    """Mean healthy duration per (engine, model), and over all healthy attempts."""
    per_model: dict[tuple[str, str | None], list[float]] = defaultdict(list)
    for a in attempts:
        if a.status == HEALTHY:
            per_model[(a.engine, a.model)].append(a.end - a.start)
    everything = [d for durations in per_model.values() for d in durations]
    overall = fmean(everything) if everything else None
    return {k: fmean(v) for k, v in per_model.items()}, overall


def counterfactual_wall(attempts: Sequence[AttemptRow]) -> float | None:
    """The wall-clock span with loops cut to the mean healthy duration and their drag undone."""
    means, overall = healthy_means(attempts)
    if overall is None:
        return None
    loops = _loops_by_resource(attempts)
    overlaps = {resource: _OverlapIndex(group) for resource, group in loops.items()}
    slowdowns = {
        resource: _split(attempts, resource, index).slowdown for resource, index in overlaps.items()
    }
    first = min(a.start for a in attempts)
    last_end = first
    for lane in lanes(attempts):
        shift = 0.0
        for a in lane:
            span = a.end - a.start
            span_cf = span
            if a.status == DEGENERATE:
                span_cf = min(span, means.get((a.engine, a.model), overall))
            elif a.status == HEALTHY and a.resource in overlaps:
                slowdown = slowdowns[a.resource]
                if (
                    slowdown is not None
                    and slowdown > 1
                    and overlaps[a.resource].overlaps(a.start, a.end)
                ):
                    span_cf = span / slowdown
            last_end = max(last_end, a.start - shift + span_cf)
            shift += span - span_cf
    return last_end - first


def inflation_estimate(attempts: Sequence[AttemptRow]) -> tuple[float | None, float | None]:
    """(inflation, counterfactual wall seconds); (None, None) when it cannot be estimated."""
    if not attempts:
        return None, None
    counterfactual = counterfactual_wall(attempts)
    if counterfactual is None or counterfactual <= 0:
        return None, counterfactual
    return (wall_seconds(attempts) - counterfactual) / counterfactual, counterfactual


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
