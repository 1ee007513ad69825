"""The promotion gate's verdict: promote the tuned model, or keep the base and say why.

Pure: it reads both models' greedy answers to the same held-out pages (`PageReading`) and
decides by a stated policy. A tuned model that loops on more pages than its base, or on as
many, is never promoted; one that loops less is promoted only when the paired split of loops
fixed against loops made is unlikely to be chance (exact McNemar p at most `max_p`) and it
keeps its accuracy (CER against the accepted answers within `max_cer_increase`) and its
length (tokens per page within `max_token_increase`) on the pages the base read without
looping, the pages a tuned model can only make worse.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any

from app.evaluate.stats import mcnemar_p, wilson

PROMOTE, KEEP_BASE = "promote", "keep base"


@dataclass(frozen=True)
class GatePolicy:
    """When a tuned model may replace its base; the defaults are the product's."""

    max_p: float = 0.05  # McNemar p of fixed against made loops at most this
    max_cer_increase: float = 0.02  # absolute CER, against the accepted answers
    max_token_increase: float = 0.25  # relative tokens per page, on pages the base did not loop


@dataclass(frozen=True)
class PageReading:
    """One model's greedy answer to one held-out page, judged by Folio's loop detector."""

    page: str
    looped: bool
    kind: str | None  # the detector's loop kind when it looped
    cer: float | None  # against the page's accepted answer; None when it has none
    tokens: int


@dataclass(frozen=True)
class ArmFigures:
    pages: int
    loops: int
    loop_rate: float
    ci95: tuple[float, float]  # Wilson, over pages
    loops_by_kind: dict[str, int]
    cer: float | None
    cer_base_healthy: float | None  # on the pages the base did not loop on
    tokens_per_page: float | None
    tokens_base_healthy: float | None


@dataclass(frozen=True)
class Verdict:
    decision: str  # PROMOTE or KEEP_BASE
    reasons: tuple[str, ...]  # why the base is kept (empty when promoted)
    evidence: str  # the paired split in words
    base: ArmFigures
    tuned: ArmFigures
    fixed: int  # pages the base looped on and the tuned model did not
    made: int  # the reverse
    mcnemar_p: float
    policy: GatePolicy

    @property
    def promote(self) -> bool:
        return self.decision == PROMOTE

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "promote": self.promote}


def decide(
    base: Sequence[PageReading], tuned: Sequence[PageReading], policy: GatePolicy | None = None
) -> Verdict:
    """The verdict on the same pages read by both models; raises ValueError if they differ."""
    policy = policy or GatePolicy()
    by_page = {r.page: r for r in tuned}
    if sorted(by_page) != sorted(r.page for r in base):
        raise ValueError("the base and the tuned model must read the same pages")
    pairs = [(b, by_page[b.page]) for b in base]
    healthy = {b.page for b in base if not b.looped}
    fixed = sum(b.looped and not t.looped for b, t in pairs)
    made = sum(t.looped and not b.looped for b, t in pairs)
    p = mcnemar_p(fixed, made)
    base_f, tuned_f = figures(base, healthy), figures(tuned, healthy)
    reasons = _loop_reasons(base_f, tuned_f, fixed, made, p, policy)
    reasons += _cost_reasons(base_f, tuned_f, policy)
    evidence = f"fixed {fixed}, made {made} (McNemar p = {p:g}) on {len(pairs)} held-out pages"
    decision = KEEP_BASE if reasons else PROMOTE
    return Verdict(decision, tuple(reasons), evidence, base_f, tuned_f, fixed, made, p, policy)


def figures(readings: Sequence[PageReading], healthy: set[str]) -> ArmFigures:
    loops = sum(r.looped for r in readings)
    kinds = Counter(r.kind or "unknown" for r in readings if r.looped)
    on_healthy = [r for r in readings if r.page in healthy]
    return ArmFigures(
        pages=len(readings),
        loops=loops,
        loop_rate=round(loops / len(readings), 4) if readings else 0.0,
        ci95=wilson(loops, len(readings)),
        loops_by_kind=dict(kinds.most_common()),
        cer=_mean([r.cer for r in readings]),
        cer_base_healthy=_mean([r.cer for r in on_healthy]),
        tokens_per_page=_mean([float(r.tokens) for r in readings]),
        tokens_base_healthy=_mean([float(r.tokens) for r in on_healthy]),
    )


def _loop_reasons(
    base: ArmFigures, tuned: ArmFigures, fixed: int, made: int, p: float, policy: GatePolicy
) -> list[str]:
    if base.pages == 0:
        return ["no held-out page to judge on (hold out a share of the pages: --held-out)"]
    said = f"{tuned.loops} of {tuned.pages} held-out pages against the base's {base.loops}"
    if tuned.loops > base.loops:
        return [f"loops more: {said} (made {made}, fixed {fixed})"]
    if tuned.loops == base.loops:
        return [f"loops no less: {said} (fixed {fixed}, made {made})"]
    if p > policy.max_p:
        return [
            f"too few loops to tell: fixed {fixed}, made {made}, McNemar p = {p:g} above "
            f"{policy.max_p:g} (hold out more pages or export more loops)"
        ]
    return []


def _cost_reasons(base: ArmFigures, tuned: ArmFigures, policy: GatePolicy) -> list[str]:
    reasons = []
    if base.cer is None or tuned.cer is None:
        reasons.append("no accepted answer to check accuracy against")
    checks = (
        ("the pages the base read without looping", base.cer_base_healthy, tuned.cer_base_healthy),
        ("all held-out pages", base.cer, tuned.cer),
    )
    for where, before, after in checks:
        if before is not None and after is not None and after > before + policy.max_cer_increase:
            reasons.append(
                f"less accurate on {where}: CER {after:.3f} against {before:.3f} "
                f"(tolerance +{policy.max_cer_increase:g})"
            )
    before, after = base.tokens_base_healthy, tuned.tokens_base_healthy
    if (
        before is not None
        and after is not None
        and after > before * (1 + policy.max_token_increase)
    ):
        reasons.append(
            f"longer answers on the pages the base read without looping: {after:.0f} tokens a "
            f"page against {before:.0f} (tolerance +{policy.max_token_increase:.0%})"
        )
    return reasons


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(fmean(kept), 4) if kept else None
