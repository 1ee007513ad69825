"""How long a GPU takes, from measurements: decode steps, prefill, the vision tower, and the
API server's own work per token (`GpuPace`); or a fixed step and nothing else (`FixedPace`: a
replay at a given step, scripted answers at none). Pure arithmetic, no I/O.

Every number is from `../shared/notes/gpu.md` (random bf16 weights on the card, CUDA graphs,
no vLLM around them, so a real vLLM step is at least this long):
- Decode steps at a KV cache of 1,536 tokens a sequence: H100 80GB from section 5 (batch 32-256),
  H200 from section 1. Between batch sizes: linear; below 32: the batch-32 step (decode there
  is bound by reading the weights); above 256: the 128-256 slope carried on.
- KV length (section 6, H100): at batch 64, 128 and 256 alike, a step grows by 12.0 ns (3B) and
  18.5 ns (7B) for every KV token held in the batch (3B at 1,536 / 3,072 / 6,144 tokens is linear
  to 3%), so a step costs `floor(batch) + per_kv_token * (total KV - 1,536 * batch)`: a loop
  that grows its KV slows every step it shares. The H200 has no KV or prefill table: its
  KV, prefill and vision costs are the H100's scaled by the ratio of the two cards' batch-256
  floors (0.84 for 3B, 0.86 for 7B), an assumption stated here.
- Prefill (section 6): 20 ms (3B) / 41 ms (7B) a page of 1,700 prompt tokens, 41 / 82 at
  3,400, flat in pages batched: linear per prompt token.
- Vision tower (section 6, Qwen2.5-VL shape, full attention in every layer, an upper bound):
  45 ms for 6,624 patches (1000 x 1288 px), 18 ms for 3,312: fitted as a*p + b*p^2.
- vLLM's `repetition_detection` runs in the scheduler on the engine thread (section 2): 7.2 us a
  request-step at max_pattern_size 16, 25 at 64, 103 at 256. Under async scheduling the engine
  thread's work hides under the GPU step while it is shorter.
- The API server's own work per streamed token: ~25-45 us (section 5, read in vLLM 0.32/0.33:
  detokenising, the output processor, SSE serialisation on one event loop), rising with the
  open streams (more sockets and tasks on the one loop). Modelled as 25 us with no other stream
  open, growing linearly to 45 us at 256 open streams; the shape between is an assumption.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Literal, Protocol

Gpu = Literal["h100", "h200"]
Shape = Literal["3b", "7b"]

KV_MEASURED = 1536  # KV tokens a sequence held when the floors were measured
BATCHES = (32, 64, 128, 256)
FLOOR_MS: dict[tuple[Gpu, Shape], tuple[float, ...]] = {
    ("h100", "3b"): (4.15, 4.75, 6.33, 9.48),  # gpu.md section 5
    ("h100", "7b"): (6.87, 8.16, 10.38, 15.14),
    ("h200", "3b"): (3.61, 3.95, 5.10, 7.93),  # gpu.md section 1
    ("h200", "7b"): (5.41, 6.18, 7.91, 13.02),
}
PER_KV_TOKEN_MS: dict[Shape, float] = {"3b": 12.0e-6, "7b": 18.5e-6}  # section 6, H100
PREFILL_MS_PER_TOKEN: dict[Shape, float] = {"3b": 20 / 1700, "7b": 41 / 1700}  # section 6
VISION_A, VISION_B = 0.004076, 4.1e-7  # ms = a*p + b*p^2: 18 ms at 3,312 patches, 45 at 6,624
PATCH_PX = 14  # Qwen2.5-VL's vision patch; 2x2 patches merge into one prompt token
REPETITION_US_PER_PATTERN_TOKEN = 7.2 / 16  # section 2: 7.2 us at 16, 25 at 64, 103 at 256
API_US_IDLE, API_US_FULL, API_FULL_STREAMS = 25.0, 45.0, 256


class Pace(Protocol):
    """What the engine asks of a pace, in milliseconds (the API server's work in us)."""

    def decode_ms(self, batch: int, kv_tokens: int) -> float: ...

    def prefill_ms(self, prompt_tokens: int) -> float: ...

    def vision_ms(self, width: int, height: int) -> float: ...

    def api_us_per_token(self, open_streams: int) -> float: ...


@dataclass(frozen=True)
class FixedPace:
    """Every step `step_ms` whatever the batch; no prefill, vision or API server work: one token
    per stream per step, as `bench stops --gpu-rates` replays pages (0: as fast as it can)."""

    step_ms: float = 0.0
    gpu: str = "fixed"
    shape: str = "-"

    def decode_ms(self, batch: int, kv_tokens: int) -> float:
        return self.step_ms

    def prefill_ms(self, prompt_tokens: int) -> float:
        return 0.0

    def vision_ms(self, width: int, height: int) -> float:
        return 0.0

    def api_us_per_token(self, open_streams: int) -> float:
        return 0.0


@dataclass(frozen=True)
class GpuPace:
    """The costs of one card running one model shape, in milliseconds."""

    gpu: Gpu = "h100"
    shape: Shape = "7b"

    @property
    def card_scale(self) -> float:
        """This card's cost over the H100's, for the tables only the H100 has."""
        mine, h100 = FLOOR_MS[(self.gpu, self.shape)], FLOOR_MS[("h100", self.shape)]
        return mine[-1] / h100[-1]

    def floor_ms(self, batch: int) -> float:
        """A decode step at `batch` sequences of 1,536 KV tokens each."""
        table = FLOOR_MS[(self.gpu, self.shape)]
        if batch <= BATCHES[0]:
            return table[0]
        i = min(bisect_left(BATCHES, batch), len(BATCHES) - 1)
        (b0, b1), (t0, t1) = BATCHES[i - 1 : i + 1], table[i - 1 : i + 1]
        return t0 + (t1 - t0) * (batch - b0) / (b1 - b0)

    def decode_ms(self, batch: int, kv_tokens: int) -> float:
        """A decode step for `batch` sequences holding `kv_tokens` KV tokens between them."""
        if batch <= 0:
            return 0.0
        per_kv = PER_KV_TOKEN_MS[self.shape] * self.card_scale
        step = self.floor_ms(batch) + per_kv * (kv_tokens - KV_MEASURED * batch)
        # never below reading the weights: the smallest batch's step without its KV work
        return max(step, self.floor_ms(1) - per_kv * KV_MEASURED * BATCHES[0])

    def prefill_ms(self, prompt_tokens: int) -> float:
        return PREFILL_MS_PER_TOKEN[self.shape] * prompt_tokens * self.card_scale

    def vision_ms(self, width: int, height: int) -> float:
        """The vision tower over one image of `width` x `height` pixels."""
        patches = image_patches(width, height)
        return (VISION_A * patches + VISION_B * patches * patches) * self.card_scale

    def api_us_per_token(self, open_streams: int) -> float:
        return api_us_per_token(open_streams)


def image_patches(width: int, height: int) -> int:
    return -(-width // PATCH_PX) * -(-height // PATCH_PX)


def image_prompt_tokens(width: int, height: int) -> int:
    """Prompt tokens an image takes (2x2 patches merged into one token, as Qwen2.5-VL)."""
    return -(-image_patches(width, height) // 4)


def repetition_ms(requests: int, max_pattern_size: int) -> float:
    """Scheduler time of vLLM's repetition_detection for `requests` checked in one step."""
    return requests * REPETITION_US_PER_PATTERN_TOKEN * max_pattern_size / 1000


def api_us_per_token(open_streams: int) -> float:
    """The API server's own work for one streamed token with `open_streams` open."""
    share = min(1.0, open_streams / API_FULL_STREAMS)
    return API_US_IDLE + (API_US_FULL - API_US_IDLE) * share
