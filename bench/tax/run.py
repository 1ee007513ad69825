"""Running one arm of the degeneration-tax workload through Folio's real VLM engine, on the
scripted test server (bench.scripted): real OCR pages and real loop shapes."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from PIL import Image, ImageDraw

from app.degeneration import LoopDetector
from app.domain import AttemptStatus, EngineResult, PageInput
from app.engines.vlm import LoopDetecting, NoLoopStop, VlmEngine
from app.engines.vlm_stops import REPETITION_DETECTION
from app.retry.plan import Limits, PageFacts, PastAttempt, next_step
from app.settings import VlmEndpoint
from bench.ocr.text import OcrText, degenerate_tails, healthy_pages
from bench.scripted import (
    ScriptedPage,
    ScriptedVlmEngine,
    cut_to_tokens,
    require_scripted_server,
    tokens_per_char,
)
from bench.scripted_loops import LoopShape, build_shapes
from bench.tax.workload import ENDPOINT, Arm, PageSpec, WorkloadConfig, plan_for
from tests.vllm_cpu.server import (
    SERVED_MODEL_NAME,
    fetch_metrics,
    generation_tokens_total,
    metric_total,
)

FACTS = PageFacts(text_layer_usable=False, endpoints=frozenset({ENDPOINT}))


@dataclass
class AttemptRun:
    step: str
    status: AttemptStatus
    tokens: int
    start: float
    end: float
    ttft_s: float | None
    finish_reason: str | None
    aborted: bool = False
    max_tokens: int | None = None
    stop: str = "none"  # what ended it: see stop_of()


@dataclass
class PageRun:
    page: PageSpec
    attempts: list[AttemptRun] = field(default_factory=list)

    @property
    def final_status(self) -> AttemptStatus:
        return self.attempts[-1].status


@dataclass
class ArmRun:
    arm: str
    repeat: int
    wall_s: float
    server_tokens: float
    pages: list[PageRun]
    began: float = 0.0  # monotonic clock, as the attempts' times
    server_steps: float = 0.0  # engine steps (vllm:iteration_tokens_total_count)


@dataclass(frozen=True)
class Scripts:
    """What the scripted server writes: real healthy OCR pages and loop shapes."""

    sources: list[OcrText]
    tokens_per_char: list[float]  # of each source, on the served tokenizer
    shapes: list[LoopShape]

    @property
    def source_tokens(self) -> list[int]:
        """Each source's length in tokens of the served tokenizer."""
        pairs = zip(self.sources, self.tokens_per_char, strict=True)
        return [round(len(source.text) * per_char) for source, per_char in pairs]


def load_scripts(base_url: str, max_tokens: int) -> Scripts:
    require_scripted_server(base_url)
    sources = healthy_pages()
    per_char = [tokens_per_char(base_url, SERVED_MODEL_NAME, page.text) for page in sources]
    # Loops must outlast any cap: a character run can pack 16+ characters into a token.
    shapes = build_shapes(sources, degenerate_tails(), min_chars=40 * max_tokens)
    return Scripts(sources, per_char, shapes)


def page_image() -> Image.Image:
    """The page image every request carries (a real prompt of about 90 tokens)."""
    image = Image.new("RGB", (640, 905), "white")
    draw = ImageDraw.Draw(image)
    for y in range(60, 860, 24):
        draw.text((50, y), f"{y:04d} The quick brown fox jumps over the lazy dog.", fill="black")
    return image


def scripted_page(page: PageSpec, scripts: Scripts, image: Image.Image) -> ScriptedPage:
    healthy = cut_to_tokens(
        scripts.sources[page.source].text,
        page.start,
        page.healthy_tokens,
        scripts.tokens_per_char[page.source],
    )
    looping = scripts.shapes[page.shape].text if page.shape is not None else None
    return ScriptedPage(image, "", False, healthy_text=healthy, looping_text=looping)


def engine_for(arm: Arm, base_url: str, concurrency: int) -> VlmEngine:
    """Folio's engine with the arm's stops switched on or off (never left to the probe)."""
    endpoint = VlmEndpoint(
        base_url=base_url,
        model=SERVED_MODEL_NAME,
        max_concurrency=concurrency,
        request_timeout_s=600,
        transport_retry_s=30,
        max_image_side=1024,
        server_repetition_detection=bool(arm.server_detection),
        engine_plugin=arm.engine_plugin,
        abort_call=arm.abort_call,
        close_probe=False,  # the arms count server tokens: no probe request among them
    )
    factory: Callable[[], LoopDetecting] = LoopDetector if arm.client_detector else NoLoopStop
    engine = ScriptedVlmEngine(ENDPOINT, endpoint, detector_factory=factory)
    if arm.server_detection and arm.server_detection != REPETITION_DETECTION["max_pattern_size"]:
        size = {"max_pattern_size": arm.server_detection}
        engine.extra_body = {"repetition_detection": {**REPETITION_DETECTION, **size}}
    return engine


def stop_of(result: EngineResult) -> str:
    """Which stop ended an attempt, as Folio's engine records it (`none`: the cap, or EOS)."""
    return result.stop_mechanism or "none"


def run_page(
    engine: VlmEngine, image: PageInput, page: PageSpec, arm: Arm, config: WorkloadConfig
) -> PageRun:
    """Attempts for one page, chosen by Folio's retry ladder (`app.retry.plan.next_step`)."""
    plan = plan_for(page, arm, config)
    limits = Limits(max_attempts=len(plan), token_budget=10 * config.max_tokens)
    run = PageRun(page)
    history: list[PastAttempt] = []
    while (index := next_step(plan, history, FACTS, limits)) is not None:
        start = time.monotonic()
        result = engine.transcribe(image, plan[index])
        tokens = result.completion_tokens or 0
        run.attempts.append(
            AttemptRun(
                plan[index].name,
                result.status,
                tokens,
                start,
                time.monotonic(),
                result.ttft_s,
                result.finish_reason,
                result.aborted,
                plan[index].max_tokens,
                stop_of(result),
            )
        )
        history.append(PastAttempt(index, result.status, tokens))
    return run


def run_arm(
    arm: Arm,
    pages: list[PageSpec],
    inputs: list[ScriptedPage],
    config: WorkloadConfig,
    base_url: str,
    concurrency: int,
    on_page: Callable[[], None] = lambda: None,
) -> tuple[float, float, list[PageRun], float, float]:
    """(batch wall-clock s, tokens the server generated, page runs, start, engine steps)."""
    engine = engine_for(arm, base_url, concurrency)
    before = settled_tokens(base_url)
    steps_before = engine_steps(base_url)
    try:
        began = time.monotonic()
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="page") as pool:
            futures = [
                pool.submit(run_page, engine, inputs[p.index], p, arm, config) for p in pages
            ]
            runs = []
            for future in as_completed(futures):
                runs.append(future.result())
                on_page()
        wall = time.monotonic() - began
    finally:
        engine.close()
    runs.sort(key=lambda r: r.page.index)
    tokens = settled_tokens(base_url) - before
    return wall, tokens, runs, began, engine_steps(base_url) - steps_before


def engine_steps(base_url: str) -> float:
    """Engine steps so far (a batch's length in steps; a lagging client adds steps too)."""
    return metric_total(fetch_metrics(base_url), "vllm:iteration_tokens_total_count")


def settled_tokens(base_url: str, hold: float = 1.0, limit: float = 30.0) -> float:
    """vllm:generation_tokens_total once it stops moving (aborted requests wind down)."""
    value = generation_tokens_total(base_url)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(hold)
        current = generation_tokens_total(base_url)
        if current == value:
            return value
        value = current
    return value
