"""The measured peak memory of a training run, on the device it ran on.

On CUDA it is torch's own figure (`max_memory_allocated`, the number an out-of-memory error is
about). On CPU there is no allocator to ask, so it is the resident set's high-water mark
(`VmHWM`, reset through `/proc/self/clear_refs` when training begins) above the resident set at
that moment, plus the bytes of the tensors already resident then (weights, buffers): the same
quantity as on CUDA, tensors only, measured from outside the allocator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


def resident_kib(field: str) -> int | None:
    """VmRSS or VmHWM of this process in KiB; None where /proc is not there (not Linux)."""
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_high_water_mark() -> bool:
    """Start VmHWM again from the current resident set (Linux: write 5 to clear_refs)."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def tensor_bytes(model: Any) -> int:
    """Bytes held by a model's parameters and buffers."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


class PeakMemory(TrainerCallback):
    """Measures the peak memory between the start and the end of `trainer.train()`."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.peak_bytes: int | None = None
        self.method = ""
        self._rss_at_start = 0
        self._resident_tensors = 0
        self._reset_worked = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
            return
        model = kw.get("model")
        self._resident_tensors = tensor_bytes(model) if model is not None else 0
        self._reset_worked = reset_high_water_mark()
        self._rss_at_start = resident_kib("VmRSS") or 0

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.device == "cuda":
            self.peak_bytes = int(torch.cuda.max_memory_allocated())
            self.method = "torch.cuda.max_memory_allocated"
            return
        high = resident_kib("VmHWM")
        if high is None or not self._reset_worked:
            return
        self.peak_bytes = self._resident_tensors + max(0, high - self._rss_at_start) * 1024
        self.method = "VmHWM rise during training + resident tensors at its start"
