"""The scale benchmark's figures from one arm's raw readings (pure)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.vllm_standin.pacing import VISION_A, VISION_B, GpuPace
from bench.vllm_standin.server import TEMPLATE_TOKENS

TEXT_PROMPT_TOKENS = TEMPLATE_TOKENS + 40  # the prompt's own text beside the image

STAGES = (
    "render",
    "textlayer",
    "tesseract",
    "encode",
    "stream_detect",
    "gpu_worker_rest",
    "cpu_worker",
    "postgres",
)
TERMINAL = ("succeeded", "fallback", "failed")


def delta(after: dict[str, Any], before: dict[str, Any], keys: tuple[str, ...]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in keys}


def standin_delta(after: list[dict[str, Any]], before: list[dict[str, Any]]) -> dict[str, Any]:
    """The stand-ins' step-log figures over one job, summed over GPUs."""
    keys = (
        "gpu_s",
        "slot_s",
        "queued_s",
        "queued_slot_s",
        "empty_waiting_slot_s",
        "empty_idle_slot_s",
        "behind_s",
        "generation_tokens",
        "computed_tokens",
        "prompt_tokens",
        "aborted",
        "prefill_s",
        "steps",
    )
    total: Counter[str] = Counter()
    loops: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    after_close: list[int] = []
    for a, b in zip(after, before, strict=True):
        total.update(delta(a, b, keys))
        total["demand_slot_s"] += a.get("demand_slot_s", 0.0) - b.get("demand_slot_s", 0.0)
        loops.update(Counter(a["loops"]) - Counter(b["loops"]))
        kinds.update(Counter(a.get("loop_kinds", {})) - Counter(b.get("loop_kinds", {})))
        after_close += a["tokens_after_close"][len(b["tokens_after_close"]) :]
    return {
        **total,
        "loops": dict(loops),
        "loop_kinds": dict(kinds),
        "tokens_after_close": sorted(after_close),
    }


def ending(step: str | None, engine: str | None, index: int | None, confirmed: bool) -> str:
    """The step a page's answer came from, as the issue names them."""
    if step is None:
        return "none"
    if confirmed:
        return "confirm"
    if engine == "vlm":
        if step == "fallback-model":
            return "fallback model"
        return "first read" if index == 0 else "VLM retry"
    return {"textlayer": "text layer", "tesseract": "Tesseract"}.get(step, step)


def endings(rows: list[Any]) -> dict[str, Any]:
    """Pages by the step that ended them, all and those that looped, and the completion tokens
    (Folio's count) a page that looped took against one that did not."""
    every = Counter(ending(*row[:4]) for row in rows)
    looped = [row for row in rows if row[4]]
    healthy = [row for row in rows if not row[4]]
    return {
        "all": dict(every),
        "looped": dict(Counter(ending(*row[:4]) for row in looped)),
        "looped_pages": len(looped),
        "tokens_per_looped_page": round(sum(r[5] for r in looped) / len(looped))
        if looped
        else None,
        "tokens_per_other_page": round(sum(r[5] for r in healthy) / len(healthy))
        if healthy
        else None,
    }


def arm_figures(
    raw: dict[str, Any], gpus: int, slowdown: float, max_num_seqs: int
) -> dict[str, Any]:
    """Throughput, slots, tokens, stops and CPU by stage of one arm's measured job."""
    job, server, cpu = raw["job"], raw["standin"], raw["cpu"]
    pages = sum(job["pages"].values())
    wall = job["seconds"] / slowdown  # in GPU time
    attempts = job["attempts"]
    degenerate = [a for a in attempts if a["status"] == "degenerate"]
    at_cap = [a for a in degenerate if (a["completion_tokens"] or 0) >= (a["max_tokens"] or 1)]
    after = server["tokens_after_close"]
    per_page = {stage: round(1000 * cpu[stage] / pages, 1) for stage in STAGES}
    return {
        "pages": pages,
        "pages_by_status": job["pages"],
        "failures": job["failures"],  # failed pages: category, error, count
        "all_terminal": set(job["pages"]) <= set(TERMINAL),
        "wall_s": round(wall, 2),
        "pages_per_s_per_gpu": round(pages / wall / gpus, 2),
        "slots_busy_while_queued": _share(
            server["queued_slot_s"], server["queued_s"] * max_num_seqs
        ),
        "slots_busy_mean": _share(server["slot_s"], server["gpu_s"] * max_num_seqs),
        "while_pages_queued": slots_while_queued(raw["queued"], gpus, slowdown, max_num_seqs),
        # the same from the first moment every slot was busy (the cold batch's fill left out)
        "steady_while_pages_queued": (
            slots_while_queued(raw["steady"], gpus, slowdown, max_num_seqs)
            if "steady" in raw
            else None
        ),
        # running + waiting over the slots: 1.0 when Folio keeps the server's queue full
        "slots_asked_mean": _share(server["demand_slot_s"], server["gpu_s"] * max_num_seqs),
        "gpu_busy": _share(server["gpu_s"], wall * gpus),
        "standin_behind_s": round(server["behind_s"] / slowdown, 2),
        # every token the GPU computed, those discarded after a close too; vLLM's counter
        # (`vllm:generation_tokens_total`) leaves those out
        "gpu_tokens": server["computed_tokens"],
        "counted_tokens": server["generation_tokens"],
        "prompt_tokens": server["prompt_tokens"],
        "loops_started": sum(server["loops"].values()),
        "loop_shapes": server["loops"],
        "loops_by_kind": server["loop_kinds"],  # reads that looped: sticky, moving, once
        "pages_ending_on": endings(job["endings"]),
        "confirming_attempts": sum(a["role"] == "confirm" for a in attempts),
        "confirming_tokens": sum(
            a["completion_tokens"] or 0 for a in attempts if a["role"] == "confirm"
        ),
        "attempts": len(attempts),
        "degenerate_attempts": len(degenerate),
        "degenerate_at_cap": len(at_cap),
        "stops": dict(Counter(a["stop_mechanism"] or "none" for a in degenerate)),
        "finish_reasons": dict(Counter(a["finish_reason"] or "none" for a in attempts)),
        "server_aborted": server["aborted"],
        "tokens_after_close": _spread(after),
        # rasterisings a page: 1 where each page a model reads is rendered once
        "rasters_per_page": round(cpu["rasters"] / pages, 3),
        "max_rss_mb": round(raw["max_rss_mb"]),
        "engines": dict(Counter(a["engine"] for a in attempts)),
        "cpu_ms_per_page": per_page,
        "cpu_ms_per_page_folio": round(sum(per_page.values()), 1),
        "cpu_ms_per_page_standins": round(1000 * cpu["standins"] / pages, 1),
    }


def slots_while_queued(
    window: dict[str, Any], gpus: int, slowdown: float, max_num_seqs: int
) -> dict[str, float | None]:
    """Where the slots went while pages waited in Folio's queue (from the submit to the last
    page's claim), as shares of every slot-second of that time: busy; empty while requests
    waited at the server (its prefill budget admits a few pages a step: the server's limit);
    empty with none waiting, and the GPU idle between steps (Folio sent too few: Folio's)."""
    slots = window["wall_s"] / slowdown * gpus * max_num_seqs
    idle_gpu = max(0.0, window["wall_s"] / slowdown * gpus - window["gpu_s"]) * max_num_seqs
    return {
        "gpu_s": round(window["wall_s"] / slowdown, 2),
        "busy": _share(window["slot_s"], slots),
        "empty_server_prefill": _share(window["empty_waiting_slot_s"], slots),
        "empty_folio_short": _share(window["empty_idle_slot_s"], slots),
        "empty_gpu_idle": _share(idle_gpu, slots),
        "standin_behind_s": round(window["behind_s"] / slowdown, 2),
    }


def cores_per_gpu(cpu_ms_per_page: dict[str, float], pages_per_s: float) -> dict[str, float]:
    """Cores a GPU reading `pages_per_s` needs for each stage at these CPU costs."""
    return {stage: round(ms / 1000 * pages_per_s, 2) for stage, ms in cpu_ms_per_page.items()}


def against_floor(arm: dict[str, Any], floor: dict[str, Any]) -> dict[str, float]:
    return {
        "wall": round(arm["wall_s"] / floor["wall_s"] - 1, 4),
        "gpu_tokens": round(arm["gpu_tokens"] / floor["gpu_tokens"] - 1, 4),
    }


def percent(value: float | None) -> str:
    """A share over a floor as a table shows it: +1.2%, or - where there is none."""
    return "-" if value is None else f"{value:+.1%}"


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole > 0 else None


def _spread(values: list[int]) -> dict[str, Any]:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "min": values[0],
        "median": values[len(values) // 2],
        "max": values[-1],
        "total": sum(values),
    }


def full_gpu_pages_per_s(
    gpu: str, shape: str, prompt_tokens: float, output_tokens: float, slots: int = 256
) -> float:
    """Pages a second one GPU reads with every slot busy (`pacing`'s tables): each page's
    prefill and vision tower, and its share of decode steps at `slots` sequences holding
    their prompt and half their output on average."""
    pace = GpuPace(gpu, shape)  # type: ignore[arg-type]
    patches = max(0.0, prompt_tokens - TEXT_PROMPT_TOKENS) * 4
    vision = (VISION_A * patches + VISION_B * patches * patches) * pace.card_scale
    kv = slots * (prompt_tokens + output_tokens / 2)
    decode = output_tokens * pace.decode_ms(slots, round(kv)) / slots
    return 1000 / (pace.prefill_ms(round(prompt_tokens)) + vision + decode)


def sizing(result: dict[str, Any], gpu: str, shape: str, folio_key: str) -> dict[str, Any]:
    """Cores per GPU by stage: Folio's default CPU per page (arm `folio_key`) times the pages a
    full GPU reads (prompt and output lengths from the floor arm's own pages)."""
    floor, folio = result["tax"]["floor"], result["tax"][folio_key]
    prompt = floor["prompt_tokens"] / max(1, floor["attempts"])
    output = floor["gpu_tokens"] / max(1, floor["attempts"])
    capacity = full_gpu_pages_per_s(gpu, shape, prompt, output)
    by_stage = cores_per_gpu(folio["cpu_ms_per_page"], capacity)
    return {
        "gpu": gpu,
        "shape": shape,
        "prompt_tokens_per_page": round(prompt),
        "output_tokens_per_page": round(output),
        "full_gpu_pages_per_s": round(capacity, 2),
        "cores_per_gpu_by_stage": by_stage,
        "cores_per_gpu": round(sum(by_stage.values()), 2),
    }
