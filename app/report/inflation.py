"""How much longer the batch took because of degeneration: a work-conserving estimate.

What the benchmark measures is `wall(arm) / wall(floor) - 1`: the same pages, once with loops
and once with every page transcribed healthily once. This module estimates the floor's wall
from the attempt rows alone.

Model. An endpoint (a server) is work-conserving: while it is busy, its time goes to the
requests it is serving, and time a loop takes is time the healthy pages could have used. So on
each resource (an endpoint, or the engine for CPU engines) the busy time is what shrinks.
Where every attempt streamed and counted its tokens (VLM attempts: each has its first token's
time), the resource is replayed on a model of a batching server (`app.report.replay`): client
lanes, batch slots and a step cost fitted to the rows, once as the batch ran and once without
its loops, each page left with no healthy attempt read once in the resource's mean healthy
length; the floor's busy time is the busy time times the ratio of the two replays. The replay
sees what sharing time out cannot: a loop that runs beside healthy pages as the batch empties
costs only its own steps, and a loop that delays its page's retry to the end of the batch costs
that tail. Otherwise (unstreamed attempts, CPU engines, no healthy attempt on the resource) busy
time is shared out among the attempts running at each moment, alike from each one's first
token where they streamed, else in proportion to their token rate (completion tokens over
duration; equal shares where tokens are unknown), and the counterfactual drops every degenerate
attempt's seconds and adds, for each page left with no healthy attempt, the mean seconds of a
healthy attempt on that resource. Tokens the server generated that no attempt received are, up
to the tokens aborted attempts left unused under their cap, lost aborts: the replay runs them
on after the client left, the shares count them degenerate (needs the server's counters,
`server_tokens`). Resources run side by side, so the batch is as long as its busiest one:

    counterfactual_wall = wall - (max busy - max counterfactual busy)
    inflation_estimate = wall / counterfactual_wall - 1

Where it fails: a batch limited by something other than the endpoint (client-side rendering,
an idle endpoint waiting on a small queue, a client too slow to keep the server's batch full)
shrinks less than the model says; tokens of unequal cost (a long prompt's prefill, an image's
encoder pass, a preempted request's recomputation) are not weighed; a replaced page's length is
unknown and costs the mean (one lane: +-10 points across the simulator's seeds); a loop's
overshoot after the job's last attempt is counted although it did not lengthen the batch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.domain import AttemptStatus
from app.report.replay import floor_ratio
from app.report.rows import AttemptRow

INFLATION_METHOD = (
    "Work-conserving per resource. Where every attempt streamed, the resource is replayed on a "
    "model of a batching server (lanes, batch slots and step cost read from the rows) with and "
    "without its loops, and its busy time scaled by the ratio; else busy time is shared among "
    "the attempts running at each moment by token rate and degenerate attempts' shares are "
    "removed. Pages left without a healthy attempt are read once at the resource's mean healthy "
    "cost; server-generated tokens no attempt received count as lost aborts when the server's "
    "counters are known. counterfactual_wall_seconds = wall - (busiest resource's time - "
    "busiest counterfactual time); inflation_estimate = wall / counterfactual - 1."
)

DEGENERATE = AttemptStatus.DEGENERATE.value
HEALTHY = AttemptStatus.OK.value


@dataclass(frozen=True)
class ResourceTime:
    """What one resource's busy time went to, in seconds."""

    busy: float
    degenerate: float
    healthy_mean: float | None  # seconds a healthy attempt cost it, on average
    replaced_pages: int  # pages with a degenerate attempt here and no healthy attempt at all
    lost_abort_share: float  # share of busy time that went to tokens no attempt received
    floor_ratio: float | None = None  # the floor's busy time over this one's, replayed

    def counterfactual(self, fallback_mean: float) -> float:
        """Busy time without the loops: replayed where it could be; else a page to replace
        costs the resource's mean healthy seconds, or `fallback_mean` (all resources') where
        it had no healthy attempt."""
        if self.floor_ratio is not None:
            return self.busy * self.floor_ratio
        mean = fallback_mean if self.healthy_mean is None else self.healthy_mean
        return self.busy - self.degenerate + self.replaced_pages * mean


@dataclass(frozen=True)
class InflationEstimate:
    inflation: float | None
    counterfactual_wall_s: float | None
    reason: str | None = None  # why there is no estimate
    degenerate_seconds: float = 0.0  # busy time the loops cost, over all resources


def wall_seconds(attempts: Sequence[AttemptRow]) -> float:
    if not attempts:
        return 0.0
    return max(a.end for a in attempts) - min(a.start for a in attempts)


def estimate_inflation(
    attempts: Sequence[AttemptRow],
    server_unreceived: Mapping[str, float] | None = None,
    replay: bool = True,
) -> InflationEstimate:
    """The estimate from the job's attempts; `server_unreceived` maps a resource to the tokens
    its server generated during the job that no attempt received (when its counters are known).
    `replay=False` shares busy time out on every resource (the method before the replay, kept
    for the benchmark's side-by-side)."""
    if len(attempts) < 2:
        return InflationEstimate(None, None, "fewer than two attempts")
    if not any(a.status == HEALTHY for a in attempts):
        return InflationEstimate(None, None, "no healthy attempt to compare with")
    wall = wall_seconds(attempts)
    if wall <= 0:
        return InflationEstimate(None, None, "the attempts span no time")
    unreceived = server_unreceived or {}
    healthy_pages = {a.page_id for a in attempts if a.status == HEALTHY}
    times = {
        resource: resource_time(group, healthy_pages, unreceived.get(resource), replay)
        for resource, group in _by_resource(attempts).items()
    }
    means = [t.healthy_mean for t in times.values() if t.healthy_mean is not None]
    overall = sum(means) / len(means)
    busiest = max(t.busy for t in times.values())
    cf_busiest = max(t.counterfactual(overall) for t in times.values())
    cf_wall = wall - (busiest - cf_busiest)
    degenerate = sum(t.degenerate for t in times.values())
    if cf_wall <= 0:
        return InflationEstimate(None, None, "the counterfactual batch takes no time", degenerate)
    return InflationEstimate(wall / cf_wall - 1, cf_wall, None, degenerate)


def resource_time(
    attempts: Sequence[AttemptRow],
    healthy_pages: set[int],
    unreceived: float | None = None,
    replay: bool = True,
) -> ResourceTime:
    """Busy time of one resource, shared out among its attempts (by token rate, or alike from
    first tokens), and with `replay` the replay's floor ratio where its attempts allow one."""
    shares, busy = attempt_seconds(attempts)
    observed_degenerate = sum(
        s for a, s in zip(attempts, shares, strict=True) if a.status == DEGENERATE
    )
    healthy = [s for a, s in zip(attempts, shares, strict=True) if a.status == HEALTHY]
    lost_tokens, lost = _lost_aborts(attempts, unreceived)
    degenerate = busy * lost + observed_degenerate * (1 - lost)
    replaced = {
        a.page_id for a in attempts if a.status == DEGENERATE and a.page_id not in healthy_pages
    }
    mean = sum(healthy) * (1 - lost) / len(healthy) if healthy else None
    ratio = floor_ratio(attempts, healthy_pages, lost_tokens) if replay else None
    return ResourceTime(busy, degenerate, mean, len(replaced), lost, ratio)


def attempt_seconds(attempts: Sequence[AttemptRow]) -> tuple[list[float], float]:
    """(seconds of busy time each attempt got, total busy time): a sweep over start and end
    events, each elementary interval split in proportion to the running attempts' rates.

    Where every attempt knows its first token's time (streamed), an attempt runs from its first
    token and the running ones share alike: a batching server gives each running request one
    token a step, and an attempt's average token rate would credit a loop with the fast steps it
    ran alone at the end of the batch. Otherwise the whole interval at the token rate: the rate
    then also discounts the time an attempt waited for a batch slot."""
    decoding = bool(attempts) and all(a.ttft_s is not None for a in attempts)
    rates = [1.0] * len(attempts) if decoding else _rates(attempts)
    events: list[tuple[float, int, int]] = []  # (time, +1 start / -1 end, attempt index)
    for i, a in enumerate(attempts):
        start = a.decoding_from if decoding else a.start
        if a.end > start:
            events += [(start, 1, i), (a.end, -1, i)]
    events.sort(key=lambda e: (e[0], e[1]))
    shares = [0.0] * len(attempts)
    running: set[int] = set()
    busy = 0.0
    previous = events[0][0] if events else 0.0
    for moment, kind, index in events:
        span = moment - previous
        if span > 0 and running:
            total = sum(rates[i] for i in running)
            for i in running:
                shares[i] += span * rates[i] / total
            busy += span
        previous = moment
        if kind > 0:
            running.add(index)
        else:
            running.discard(index)
    return shares, busy


def _rates(attempts: Sequence[AttemptRow]) -> list[float]:
    """Tokens per second of each attempt; 1 each (equal shares) where tokens are unknown."""
    if any(not a.completion_tokens for a in attempts):
        return [1.0] * len(attempts)
    return [(a.completion_tokens or 0) / (a.end - a.start or 1.0) for a in attempts]


def _lost_aborts(attempts: Sequence[AttemptRow], unreceived: float | None) -> tuple[float, float]:
    """(tokens, share of the server's tokens) that aborted attempts' requests went on
    generating unseen: tokens no attempt received, up to what the aborted attempts left under
    their cap."""
    if not unreceived or unreceived <= 0:
        return 0.0, 0.0
    headroom = sum(a.unused_cap for a in attempts)
    lost = min(unreceived, headroom)
    received = sum(a.completion_tokens or 0 for a in attempts)
    total = received + unreceived
    return lost, lost / total if total > 0 else 0.0


def _by_resource(attempts: Sequence[AttemptRow]) -> dict[str, list[AttemptRow]]:
    groups: dict[str, list[AttemptRow]] = defaultdict(list)
    for a in attempts:
        groups[a.resource].append(a)
    return groups
