"""Replay a streamed batch on a model of a batching server, with and without its loops.

A batching server (vLLM's decode loop) gives each running request one token a step, and a
step's length grows with the batch: `1 + per_sequence * running` (in units of an empty step).
On a GPU `per_sequence` is near 0 (a step costs about the same with 1 or 8 sequences); on a CPU
it is not. The replay needs only what the attempt rows hold: each attempt's tokens, the order
pages came in, how many attempts the client kept in flight (its lanes) and how many decoded at
once while others waited (the server's batch slots); `per_sequence` is fitted to the attempts'
own token rates. Replaying the batch once as it ran and once without its loops gives the share
of the busy time the floor would have taken; where the batch emptied with a loop still running,
that counts only what the loop's own steps cost, which sharing time out cannot see.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass

from app.domain import AttemptStatus
from app.report.rows import AttemptRow

DEGENERATE = AttemptStatus.DEGENERATE.value
HEALTHY = AttemptStatus.OK.value
# Per-sequence step costs tried in the fit (relative to a step's fixed cost): 0, then 1/1000
# to 9 in steps of 20%.
PER_SEQUENCE_GRID = (0.0, *(0.001 * 1.2**i for i in range(51)))


@dataclass(frozen=True)
class Request:
    """One attempt as the server saw it: `tokens` decoded; the client's lane is free after
    `lane_tokens` of them (fewer where the client gave up and the server went on)."""

    tokens: int
    lane_tokens: int


@dataclass(frozen=True)
class ServerShape:
    lanes: int  # attempts the client kept in flight
    slots: int  # attempts decoding at once while others waited
    per_sequence: float  # a step's cost per running sequence, relative to its fixed cost


def floor_ratio(
    attempts: Sequence[AttemptRow], healthy_pages: set[int], lost_tokens: float = 0.0
) -> float | None:
    """The floor's busy time over the batch's, replayed; None where the attempts cannot be
    replayed (one not streamed or without a token count, or no healthy attempt here).
    `lost_tokens` the server generated for aborted attempts after the client left."""
    if not attempts or any(a.ttft_s is None or a.completion_tokens is None for a in attempts):
        return None
    healthy = [a.completion_tokens or 0 for a in attempts if a.status == HEALTHY]
    if not healthy:
        return None
    shape = server_shape(attempts)
    in_order = sorted(attempts, key=lambda a: (a.start, a.page_id))  # ties: page order
    actual = replay(_pages(in_order, lost_tokens), shape)
    floor = replay(_floor_pages(in_order, healthy_pages, sum(healthy) / len(healthy)), shape)
    return floor / actual if actual > 0 else None


def server_shape(attempts: Sequence[AttemptRow]) -> ServerShape:
    levels = _concurrency(attempts)
    lanes = max((k for k in levels.in_flight if k), default=1)
    slots = (
        max(levels.full, key=levels.full.__getitem__)
        if levels.full
        else max(levels.decoding, default=1)
    )
    return ServerShape(lanes, max(1, slots), fit_per_sequence(attempts, levels))


@dataclass(frozen=True)
class _Levels:
    in_flight: dict[int, float]  # attempts in flight -> seconds
    decoding: dict[int, float]  # attempts decoding -> seconds
    full: dict[int, float]  # attempts decoding while one waited -> seconds
    per_attempt: list[dict[int, float]]  # decoding concurrency -> seconds, per attempt


def _concurrency(attempts: Sequence[AttemptRow]) -> _Levels:
    """A sweep over each attempt's waiting (start to first token) and decoding phases."""
    events: list[tuple[float, int, int, bool]] = []  # (time, +1/-1, attempt, decoding)
    for i, a in enumerate(attempts):
        if a.decoding_from > a.start:
            events += [(a.start, 1, i, False), (a.decoding_from, -1, i, False)]
        if a.end > a.decoding_from:
            events += [(a.decoding_from, 1, i, True), (a.end, -1, i, True)]
    events.sort(key=lambda e: (e[0], e[1]))
    levels = _Levels(defaultdict(float), defaultdict(float), defaultdict(float), [])
    per_attempt: list[dict[int, float]] = [defaultdict(float) for _ in attempts]
    waiting: set[int] = set()
    running: set[int] = set()
    previous = events[0][0] if events else 0.0
    for moment, kind, index, decoding in events:
        span = moment - previous
        if span > 0:
            levels.in_flight[len(waiting) + len(running)] += span
            if running:
                levels.decoding[len(running)] += span
                if waiting:
                    levels.full[len(running)] += span
                for i in running:
                    per_attempt[i][len(running)] += span
        previous = moment
        group = running if decoding else waiting
        (group.add if kind > 0 else group.discard)(index)
    levels.per_attempt.extend(per_attempt)
    return levels


def fit_per_sequence(attempts: Sequence[AttemptRow], levels: _Levels | None = None) -> float:
    """The per-sequence step cost that best explains each attempt's tokens from the batch
    sizes it decoded in (least squares weighted by 1/tokens, so long attempts, which decode
    through many batch sizes, carry it; 0, a flat step, where it cannot tell). `levels`: the
    attempts' sweep, where the caller has it."""
    seconds_at = (levels or _concurrency(attempts)).per_attempt
    data = [
        (float(a.completion_tokens or 0), at)
        for a, at in zip(attempts, seconds_at, strict=True)
        if (a.completion_tokens or 0) > 1 and at
    ]
    if not data:
        return 0.0
    errors = {c: _fit_error(data, c) for c in PER_SEQUENCE_GRID}
    least = min(errors.values())
    return min(c for c, error in errors.items() if error <= least + 1e-12)


def _fit_error(data: list[tuple[float, dict[int, float]]], per_sequence: float) -> float:
    """Squared error of tokens ~ rate * steps over tokens (a count's variance grows with it),
    where an attempt's steps are its seconds at each batch size over that step's cost, at
    the best rate."""
    steps = [sum(s / (1 + per_sequence * k) for k, s in at.items()) for _, at in data]
    # minimise sum((t - rate * x)^2 / t) over rate: rate = sum(x) / sum(x^2 / t)
    rate = sum(steps) / sum(x * x / t for (t, _), x in zip(data, steps, strict=True))
    return sum((t - rate * x) ** 2 / t for (t, _), x in zip(data, steps, strict=True))


def replay(pages: Sequence[Sequence[Request]], shape: ServerShape) -> float:
    """Seconds (in empty-step units) the batch takes: `lanes` client lanes take the pages in
    order, each sending a page's attempts one after another; the server runs up to `slots`
    requests first come first served, one token each a step."""
    waiting_pages = deque(pages)
    queue: deque[tuple[int, Request]] = deque()  # (lane, request)
    running: list[list[int]] = []  # [tokens left, lane tokens left, lane or -1]
    page_left: dict[int, deque[Request]] = {}
    clock = 0.0

    def send_next(lane: int) -> None:
        left = page_left.get(lane)
        while not left and waiting_pages:
            left = page_left[lane] = deque(waiting_pages.popleft())
        if left:
            queue.append((lane, left.popleft()))

    for lane in range(shape.lanes):
        send_next(lane)
    while queue or running:
        while queue and len(running) < shape.slots:
            lane, request = queue.popleft()
            running.append([request.tokens, request.lane_tokens, lane])
        freed = [item for item in running if item[2] >= 0 and item[1] <= 0]
        for item in freed:
            lane, item[2] = item[2], -1
            send_next(lane)
        done = [item for item in running if item[0] <= 0]
        running = [item for item in running if item[0] > 0]
        if freed or done or not running:
            continue
        step = min(item[1] if item[2] >= 0 else item[0] for item in running)
        clock += step * (1 + shape.per_sequence * len(running))
        for item in running:
            item[0] -= step
            item[1] -= step
    return clock


def _pages(in_order: Sequence[AttemptRow], lost_tokens: float) -> list[list[Request]]:
    """The batch as it ran (attempts in the order they began): each page's attempts in order;
    aborted attempts' requests go on for their share of `lost_tokens` after the lane is free."""
    total = sum(a.unused_cap for a in in_order)
    pages: dict[int, list[Request]] = {}
    for a in in_order:
        received = a.completion_tokens or 0
        extra = round(lost_tokens * a.unused_cap / total) if total else 0
        pages.setdefault(a.page_id, []).append(Request(received + extra, received))
    return list(pages.values())


def _floor_pages(
    in_order: Sequence[AttemptRow], healthy_pages: set[int], mean_healthy: float
) -> list[list[Request]]:
    """The batch without its loops: a page keeps its other attempts, and a page left with no
    healthy attempt anywhere is read once, in the mean healthy length, where it first looped."""
    pages: dict[int, list[Request]] = {}
    replaced: set[int] = set()
    mean = Request(round(mean_healthy), round(mean_healthy))
    for a in in_order:
        page = pages.setdefault(a.page_id, [])
        if a.status != DEGENERATE:
            page.append(Request(a.completion_tokens or 0, a.completion_tokens or 0))
        elif a.page_id not in healthy_pages and a.page_id not in replaced:
            replaced.add(a.page_id)
            page.append(mean)
    return [page for page in pages.values() if page]
