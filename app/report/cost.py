"""What each attempt cost.

Token prices and the CPU price are per attempt: prompt and completion tokens times the
endpoint's per-million prices; a CPU engine's duration times the core-hour price (one core per
attempt: Folio runs Tesseract single-threaded and parallelises across pages).

A GPU price pays for the time the endpoint was busy, i.e. the union of its attempts' [start, end]
intervals, times `gpus`. That time is shared out by a sweep over the timeline: between two
consecutive start/end instants the same attempts are running, and that slice's cost is split
among them in proportion to their token rate (completion tokens / duration), so an attempt is
charged for its share of the tokens generated while the engine was busy. Attempts without
tokens split a slice evenly when nothing running has a rate. Other jobs' attempts on the same
endpoint (`neighbours`) take their share of the slices they overlap and are then dropped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.report.pricing import CPU_ENGINES, Pricing
from app.report.rows import AttemptRow

COST_ATTRIBUTION = (
    "GPU-priced endpoints: busy time (union of the endpoint's attempt intervals) x gpus x "
    "usd_per_gpu_hour, split within each slice of time among the attempts running then in "
    "proportion to their token rate (completion tokens / duration); other jobs' attempts on the "
    "same endpoint take their share. Token-priced endpoints: prompt and completion tokens x "
    "their per-million prices. CPU engines: duration x cpu_usd_per_hour. Attempts on an "
    "endpoint without prices cost 0 and are counted in attempts_unpriced."
)


@dataclass(frozen=True)
class AttemptCost:
    gpu: float = 0.0
    tokens: float = 0.0
    cpu: float = 0.0
    priced: bool = False

    @property
    def total(self) -> float:
        return self.gpu + self.tokens + self.cpu


def direct_cost(
    pricing: Pricing,
    engine: str,
    endpoint: str | None,
    duration_s: float,
    prompt_tokens: int | None,
    completion_tokens: int | None,
) -> tuple[float, float, bool]:
    """(token cost, CPU cost, priced) of one attempt: the parts that need no timeline."""
    if engine in CPU_ENGINES:
        price = pricing.cpu_usd_per_hour
        return 0.0, (duration_s * price / 3600.0 if price is not None else 0.0), price is not None
    ep = pricing.for_endpoint(endpoint)
    if ep is None:
        return 0.0, 0.0, False
    tokens = (prompt_tokens or 0) * (ep.usd_per_m_input or 0.0) / 1e6
    tokens += (completion_tokens or 0) * (ep.usd_per_m_output or 0.0) / 1e6
    return tokens, 0.0, ep.priced


def attempt_costs(
    attempts: Sequence[AttemptRow], neighbours: Sequence[AttemptRow], pricing: Pricing
) -> dict[int, AttemptCost]:
    gpu = gpu_time_costs([*attempts, *neighbours], pricing)
    costs = {}
    for a in attempts:
        tokens, cpu, priced = direct_cost(
            pricing, a.engine, a.endpoint, a.duration_s, a.prompt_tokens, a.completion_tokens
        )
        costs[a.id] = AttemptCost(gpu.get(a.id, 0.0), tokens, cpu, priced)
    return costs


def gpu_time_costs(attempts: Iterable[AttemptRow], pricing: Pricing) -> dict[int, float]:
    """Each attempt's share of its endpoint's GPU-priced busy time."""
    groups: dict[str, list[AttemptRow]] = defaultdict(list)
    for a in attempts:
        ep = pricing.for_endpoint(a.endpoint)
        if a.engine not in CPU_ENGINES and ep is not None and ep.usd_per_gpu_hour is not None:
            groups[a.endpoint or ""].append(a)
    costs: dict[int, float] = {}
    for endpoint, group in groups.items():
        price = pricing.endpoints[endpoint].gpu_usd_per_second
        costs.update(_sweep(group, price))
    return costs


def _rate(a: AttemptRow) -> float:
    span = a.end - a.start
    return (a.completion_tokens or 0) / span if span > 0 else 0.0


def _sweep(group: list[AttemptRow], usd_per_second: float) -> dict[int, float]:
    # An attempt's share of a slice is rate / (total rate running), so its cost is
    # rate * price * integral of dt / total_rate over its interval: one pass accumulates that
    # integral (and, for slices where nothing running has a rate, that of dt / attempts running).
    rates = {a.id: _rate(a) for a in group}
    events = sorted(
        [(a.start, 1, a.id) for a in group] + [(a.end, -1, a.id) for a in group],
        key=lambda e: e[0],
    )
    per_rate = per_head = total_rate = 0.0
    with_rate = running = 0
    integral: dict[float, tuple[float, float]] = {}
    previous = events[0][0] if events else 0.0
    for t, step, attempt_id in events:
        if t > previous:
            if with_rate:
                per_rate += (t - previous) / total_rate
            elif running:
                per_head += (t - previous) / running
            previous = t
        integral[t] = (per_rate, per_head)
        running += step
        rate = rates[attempt_id]
        if rate > 0:
            with_rate += step
            total_rate = total_rate + step * rate if with_rate else 0.0
    costs = {}
    for a in group:
        (rate_start, head_start), (rate_end, head_end) = integral[a.start], integral[a.end]
        rate = rates[a.id]
        share = rate * (rate_end - rate_start) if rate > 0 else head_end - head_start
        costs[a.id] = usd_per_second * share
    return costs
