"""The degeneration-tax workload: which pages loop (and in which shape), how long healthy
pages are, and each arm's attempt plan for a page. Pure data, no I/O.

Pages run on the scripted test server (bench.scripted): a healthy read replays a real healthy
OCR page, whole by default (its own length, as a model would transcribe it), or cut to a drawn
length (`median_tokens`); the first (greedy) read of a degenerate page replays a real loop shape
(bench.scripted_loops) until the token cap or a stop."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from app.settings import PlanStep

ENDPOINT = "primary"


@dataclass(frozen=True)
class WorkloadConfig:
    pages: int = 120
    degenerate_share: float = 0.05
    max_tokens: int = 2048  # the token cap a looping request runs into
    # Healthy page length: None reads each page's source whole (real OCR pages: median 2,285
    # characters, about 700 tokens here); a number draws lengths around it (lognormal) and
    # cuts the source to them, as the bench did before 2026-11-24 (64 quick, 128 full).
    median_tokens: int | None = None
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
    degenerate: bool  # the first (greedy) read of this page loops until a stop or the cap
    healthy_tokens: int  # the page's length when transcribed healthily
    seed: int
    source: int = 0  # which healthy OCR page its text comes from (an index)
    shape: int | None = None  # which loop shape a degenerate page falls into (an index)
    start: float = 0.0  # where in its source the page's text begins (a fraction)


@dataclass(frozen=True)
class Arm:
    key: str
    title: str
    counterfactual: bool = False  # degenerate pages replaced by healthy ones
    client_detector: bool = False  # Folio's online LoopDetector in the client
    server_detection: int | None = None  # vLLM repetition_detection's max_pattern_size
    engine_plugin: bool = False  # Folio's vLLM plugin stops the request inside the engine
    abort_call: bool = False  # the client also sends an explicit abort by request id

    @property
    def retry(self) -> bool:
        """Every arm that stops loops retries the page; A (none) and B (no loops) do not."""
        return self.client_detector or bool(self.server_detection) or self.engine_plugin


GENEROUS_PATTERN = 256  # tokens: about 800 characters of English on this tokenizer

ARMS = {
    arm.key: arm
    for arm in (
        Arm("A", "no mitigation: loops run to max_tokens"),
        Arm("B", "floor: loops replaced by healthy pages", counterfactual=True),
        Arm(
            "B-plugin",
            "floor with Folio's plugin on every request (its cost on a loop-free batch)",
            counterfactual=True,
            engine_plugin=True,
        ),
        Arm(
            "C",
            "client close: Folio's detector in the client closes the stream",
            client_detector=True,
        ),
        Arm(
            "C-plugin",
            "Folio's detector inside the engine (vLLM plugin), client detector beside it",
            client_detector=True,
            engine_plugin=True,
        ),
        Arm(
            "C-abort",
            "client detector, then an explicit abort call by request id (and close)",
            client_detector=True,
            abort_call=True,
        ),
        Arm("D16", "vLLM repetition_detection, max_pattern_size 16", server_detection=16),
        Arm(
            f"D{GENEROUS_PATTERN}",
            f"vLLM repetition_detection, max_pattern_size {GENEROUS_PATTERN}",
            server_detection=GENEROUS_PATTERN,
        ),
        Arm(
            "E",
            "client close + repetition_detection 16",
            client_detector=True,
            server_detection=16,
        ),
        Arm(
            "F",
            "Folio's default (auto): plugin + abort call + close (repetition_detection only "
            "where the plugin is absent)",
            client_detector=True,
            engine_plugin=True,
            abort_call=True,
        ),
    )
}
DEFAULT_ARMS = tuple(ARMS)


def build_workload(
    config: WorkloadConfig, source_tokens: list[int], shapes: int = 1
) -> list[PageSpec]:
    """The pages in submission order; the same for every arm. Healthy texts come from the OCR
    pages whose lengths (tokens) `source_tokens` gives, loops from `shapes` loop shapes, taken
    in turn from a seeded order. No healthy page is longer than half the cap."""
    rng = random.Random(config.seed)
    looping = sorted(rng.sample(range(config.pages), config.degenerate_pages))
    shape_order = rng.sample(range(shapes), shapes)
    cap = max(config.min_tokens, config.max_tokens // 2)
    median = config.median_tokens
    pages = []
    for index in range(config.pages):
        drawn = rng.lognormvariate(math.log(median or 1), config.length_sigma)
        shape = shape_order[looping.index(index) % shapes] if index in looping else None
        source = rng.randrange(len(source_tokens))
        seed = rng.randrange(1, 2**31)
        length = round(drawn) if median else source_tokens[source]
        tokens = min(cap, max(config.min_tokens, length))
        start = (seed % 1000) / 1000 if median else 0.0
        pages.append(PageSpec(index, index in looping, tokens, seed, source, shape, start))
    return pages


def healthy_step(
    config: WorkloadConfig, page: PageSpec, name: str = "healthy", seed_offset: int = 0
) -> PlanStep:
    """Penalised sampling, as Folio's retry ladder asks; on the scripted server the page's
    healthy text comes back whatever the sampling, and ends with EOS well before the cap."""
    return PlanStep(
        name=name,
        engine="vlm",
        endpoint=ENDPOINT,
        temperature=0.8,
        repetition_penalty=1.3,
        seed=page.seed + seed_offset,
        max_tokens=config.max_tokens,
    )


def looping_step(config: WorkloadConfig) -> PlanStep:
    """Greedy decoding: on a degenerate page the scripted server replays a loop shape."""
    return PlanStep(
        name="greedy",
        engine="vlm",
        endpoint=ENDPOINT,
        temperature=0.0,
        max_tokens=config.max_tokens,
    )


def plan_for(page: PageSpec, arm: Arm, config: WorkloadConfig) -> list[PlanStep]:
    """The attempt plan of one page under one arm (`app.retry.plan.next_step` walks it)."""
    if arm.counterfactual or not page.degenerate:
        first = healthy_step(config, page)
    else:
        first = looping_step(config)
    if not arm.retry:
        return [first]
    # A retry re-reads the page with penalised sampling (another seed).
    return [first, healthy_step(config, page, name="retry-penalized", seed_offset=7919)]
