"""Which stop catches which loop shape, and after how many tokens.

Every loop shape (bench.scripted_loops) is read once per arm, all shapes in one concurrent batch,
as the first (greedy) read of a degenerate page; no retry. A shape that no stop catches runs
to the workload's token cap, as it would on a page of the workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from app.domain import AttemptStatus
from app.engines.vlm_stops import REPETITION_DETECTION
from bench.scripted import ScriptedPage
from bench.scripted_loops import LoopShape
from bench.tax.run import engine_for, page_image, settled_tokens, stop_of
from bench.tax.workload import ARMS, WorkloadConfig, looping_step
from tests.vllm_cpu.server import SERVED_MODEL_NAME, root_url_of


def shape_sweep(
    arm_keys: list[str],
    shapes: list[LoopShape],
    config: WorkloadConfig,
    base_url: str,
    concurrency: int,
) -> dict[str, Any]:
    """{"shapes": [...], "arms": {arm: {"caught", "tokens", "stops", "overshoot"}}}."""
    image = page_image()
    pages = [ScriptedPage(image, "", False, looping_text=shape.text) for shape in shapes]
    step = looping_step(config)
    arms: dict[str, Any] = {}
    for key in arm_keys:
        engine = engine_for(ARMS[key], base_url, concurrency)
        before = settled_tokens(base_url)
        try:
            with ThreadPoolExecutor(concurrency) as pool:
                results = list(pool.map(engine.transcribe, pages, [step] * len(pages)))
        finally:
            engine.close()
        received = sum(r.completion_tokens or 0 for r in results)
        arms[key] = {
            "caught": [r.status is AttemptStatus.DEGENERATE for r in results],
            "tokens": [r.completion_tokens for r in results],
            "stops": [stop_of(r) for r in results],
            "overshoot_tokens": round(settled_tokens(base_url) - before - received),
        }
    described = [
        {
            "name": s.name,
            "source": s.source,
            "period_chars": s.period_chars,
            "exact_repeat_at": exact_repeat_at(script_tokens(base_url, s.text), config.max_tokens),
        }
        for s in shapes
    ]
    return {"max_tokens": config.max_tokens, "shapes": described, "arms": arms}


def script_tokens(base_url: str, text: str) -> list[int]:
    """The token ids the scripted server emits for `text` (its own tokenizer, /tokenize)."""
    response = httpx.post(
        f"{root_url_of(base_url)}/tokenize",
        json={"model": SERVED_MODEL_NAME, "prompt": text, "add_special_tokens": False},
        timeout=60,
    )
    response.raise_for_status()
    return [int(token) for token in response.json()["tokens"]]


def exact_repeat_at(
    token_ids: Sequence[int],
    cap: int,
    max_pattern: int = REPETITION_DETECTION["max_pattern_size"],
    min_count: int = REPETITION_DETECTION["min_count"],
) -> int | None:
    """The output length at which vLLM's repetition_detection (the rule of
    vllm/v1/core/sched/utils.py: the last L tokens, L <= max_pattern, repeated min_count times
    in a row) stops this output, or None when it runs to `cap` unseen by it. Shapes with a
    value are those any arm with repetition_detection must catch; the others (drifting
    numbers, long periods, fewer copies than the cap holds) only a text detector can."""
    for length in range(1, min(cap, len(token_ids)) + 1):
        tail = token_ids[:length]
        for period in range(1, max_pattern + 1):
            if period * min_count > length:
                break
            unit = tail[length - period :]
            copies = tail[length - period * min_count :]
            if list(copies) == list(unit) * min_count:
                return length
    return None
