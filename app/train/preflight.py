"""Before the first step: will the run fit the device, and if not, what would.

Pure: the estimate (app.train.memory) against the free memory the trainer read. A batch that
does not fit is split into gradient-accumulation steps with the same effective batch; when even
one pair per step does not fit, the run is refused with what would fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.errors import TrainMemoryError
from app.train.memory import GIB, Estimate, Run, Shapes, estimate

# Use at most this share of the free memory: allocator fragmentation, and the estimate's error.
HEADROOM = 0.9
MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True)
class Fit:
    """The batch and accumulation the run will use, and why."""

    batch_size: int
    grad_accum: int
    estimate: Estimate
    free_bytes: int | None
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "grad_accum": self.grad_accum,
            "estimated_peak_bytes": self.estimate.total,
            "estimate_parts": self.estimate.parts,
            "free_bytes": self.free_bytes,
            "note": self.note,
        }


def fit_batch(
    config: dict[str, Any], shapes: Shapes, run: Run, grad_accum: int, free_bytes: int | None
) -> Fit:
    """The asked batch if it fits, else the largest that does; raises TrainMemoryError."""
    try:
        first = estimate(config, shapes, run)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        note = f"not estimated: the model's config has no {exc} the estimate reads"
        return Fit(run.batch_size, grad_accum, Estimate({}), free_bytes, note)
    if free_bytes is None:
        return Fit(run.batch_size, grad_accum, first, None, "free memory unknown: not checked")
    budget = int(free_bytes * HEADROOM)
    if first.total <= budget:
        note = f"estimated peak {_gib(first.total)} of {_gib(free_bytes)} free"
        return Fit(run.batch_size, grad_accum, first, free_bytes, note)
    effective = run.batch_size * grad_accum
    for batch in range(run.batch_size - 1, 0, -1):
        if effective % batch:  # keep the effective batch exactly
            continue
        smaller = estimate(config, shapes, replace(run, batch_size=batch))
        if smaller.total <= budget:
            accum = effective // batch
            note = (
                f"batch {run.batch_size} x accumulation {grad_accum} needs about "
                f"{_gib(first.total)}, {_gib(free_bytes)} free: training at batch {batch} x "
                f"accumulation {accum} instead (estimated peak {_gib(smaller.total)})"
            )
            return Fit(batch, accum, smaller, free_bytes, note)
    raise TrainMemoryError(_refusal(config, shapes, run, free_bytes))


def _refusal(config: dict[str, Any], shapes: Shapes, run: Run, free_bytes: int) -> str:
    budget = int(free_bytes * HEADROOM)
    single = replace(run, batch_size=1)
    need = estimate(config, shapes, single)
    ways = []
    if not run.gradient_checkpointing:
        with_ckpt = estimate(config, shapes, replace(single, gradient_checkpointing=True))
        if with_ckpt.total <= budget:
            ways.append(f"--gradient-checkpointing ({_gib(with_ckpt.total)} at batch 1)")
    length = _longest_fitting_length(config, shapes, single, budget)
    if length is not None:
        ways.append(f"--max-length {length} (cuts the longest completions)")
    tokens = _largest_fitting_image(config, shapes, single, budget)
    if tokens is not None:
        ways.append(f"--max-image-tokens {tokens} (pages read at a lower resolution)")
    hint = "; or ".join(ways) if ways else "a larger device"
    return (
        f"not enough memory: one pair a step needs about {_gib(need.total)} (the model's "
        f"weights alone {_gib(need.parts['weights'])}), "
        f"{_gib(free_bytes)} free on {run.device}, of which {HEADROOM:.0%} is planned for. "
        f"What would fit: {hint}. "
        "(--no-memory-check skips this check.)"
    )


def _longest_fitting_length(
    config: dict[str, Any], shapes: Shapes, run: Run, budget: int
) -> int | None:
    low, high = shapes.prompt_tokens + 1, min(run.max_length, _full_length(shapes)) - 1
    if low > high or estimate(config, shapes, replace(run, max_length=low)).total > budget:
        return None
    while low < high:  # the largest length that fits: estimates grow with the length
        middle = (low + high + 1) // 2
        fits = estimate(config, shapes, replace(run, max_length=middle)).total <= budget
        low, high = (middle, high) if fits else (low, middle - 1)
    return low


def _largest_fitting_image(
    config: dict[str, Any], shapes: Shapes, run: Run, budget: int
) -> int | None:
    low, high = 4, shapes.image_tokens - 1
    if low > high or estimate(config, shapes.with_image_tokens(low), run).total > budget:
        return None
    while low < high:
        middle = (low + high + 1) // 2
        fits = estimate(config, shapes.with_image_tokens(middle), run).total <= budget
        low, high = (middle, high) if fits else (low, middle - 1)
    return low


def _full_length(shapes: Shapes) -> int:
    return shapes.prompt_tokens + shapes.completion_tokens


def _gib(count: int) -> str:
    return f"{count / GIB:.1f} GiB"


def available_ram() -> int | None:
    """MemAvailable from /proc/meminfo, in bytes; None where there is no /proc."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
