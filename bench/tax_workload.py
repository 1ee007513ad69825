"""The degeneration-tax workload: which pages loop, how long healthy pages are, and each
arm's attempt plan for a page. Pure data, no I/O."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from app.settings import PlanStep

ENDPOINT = "primary"


@dataclass(frozen=True)
class WorkloadConfig:
    pages: int = 400
    degenerate_share: float = 0.025
    max_tokens: int = 1024  # the token cap a looping request runs into
    median_tokens: int = 96  # healthy page length (lognormal)
    length_sigma: float = 0.6
    min_tokens: int = 16
    seed: int = 20261122

    @property
    def degenerate_pages(self) -> int:
        wanted = round(self.pages * self.degenerate_share)
        return max(1, wanted) if self.degenerate_share > 0 else 0


@dataclass(frozen=True)
class PageSpec:
    index: int
    degenerate: bool  # greedy decoding on this page loops until max_tokens
    healthy_tokens: int  # the page's length when transcribed healthily
    seed: int


@dataclass(frozen=True)
class Arm:
    key: str
    title: str
    counterfactual: bool = False  # degenerate pages replaced by healthy ones
    client_detector: bool = False  # Folio's online LoopDetector aborts the stream
    server_detection: bool = False  # vLLM's repetition_detection ends the request
    retry: bool = False  # a degenerate attempt is retried by the next plan step


ARMS = {
    "A": Arm("A", "no mitigation: loops run to max_tokens"),
    "B": Arm("B", "counterfactual: loops replaced by healthy pages", counterfactual=True),
    "C": Arm("C", "Folio: online detection + abort + retry", client_detector=True, retry=True),
    "D": Arm("D", "vLLM repetition_detection + retry", server_detection=True, retry=True),
    "E": Arm(
        "E",
        "Folio + vLLM repetition_detection (server_repetition_detection=true)",
        client_detector=True,
        server_detection=True,
        retry=True,
    ),
}


def build_workload(config: WorkloadConfig) -> list[PageSpec]:
    """The pages in submission order; the same for every arm."""
    rng = random.Random(config.seed)
    looping = set(rng.sample(range(config.pages), config.degenerate_pages))
    cap = max(config.min_tokens, config.max_tokens // 2)
    pages = []
    for index in range(config.pages):
        drawn = rng.lognormvariate(math.log(config.median_tokens), config.length_sigma)
        tokens = min(cap, max(config.min_tokens, round(drawn)))
        pages.append(PageSpec(index, index in looping, tokens, rng.randrange(1, 2**31)))
    return pages


def healthy_step(page: PageSpec, name: str = "healthy", seed_offset: int = 0) -> PlanStep:
    """Penalised sampling: the tiny model writes non-looping text, ended at the page's length."""
    return PlanStep(
        name=name,
        engine="vlm",
        endpoint=ENDPOINT,
        temperature=0.8,
        repetition_penalty=1.3,
        seed=page.seed + seed_offset,
        max_tokens=page.healthy_tokens,
    )


def looping_step(config: WorkloadConfig) -> PlanStep:
    """Greedy decoding: the tiny model loops from its first tokens."""
    return PlanStep(
        name="greedy",
        engine="vlm",
        endpoint=ENDPOINT,
        temperature=0.0,
        max_tokens=config.max_tokens,
    )


def plan_for(page: PageSpec, arm: Arm, config: WorkloadConfig) -> list[PlanStep]:
    """The attempt plan of one page under one arm (`app.plan.next_step` walks it)."""
    if arm.counterfactual or not page.degenerate:
        first = healthy_step(page)
    else:
        first = looping_step(config)
    if not arm.retry:
        return [first]
    # A retry re-reads the page with penalised sampling (another seed, so that a healthy page
    # wrongly flagged does not repeat the same text).
    return [first, healthy_step(page, name="retry-penalized", seed_offset=7919)]
