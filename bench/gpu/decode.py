"""The decode-step floor of a Qwen2.5-VL-shaped language model, in torch with random weights.

One step at batch B: every sequence adds one token on top of a KV cache of `kv_len` tokens;
per layer RMSNorm, fused QKV projection, grouped-query attention over the cache (SDPA),
output projection, RMSNorm, SwiGLU MLP; then the final norm and the LM head. No scheduler,
sampler or Python around it (the step is captured in a CUDA graph and replayed), so a real
vLLM step on the same GPU is at least this long.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Shape:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int

    def weight_bytes(self, element: int = 2) -> int:
        qkv = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
        out = self.heads * self.head_dim * self.hidden
        mlp = 3 * self.hidden * self.intermediate
        return element * (self.layers * (qkv + out + mlp) + self.hidden * self.vocab)

    def kv_bytes(self, batch: int, kv_len: int, element: int = 2) -> int:
        return element * self.layers * 2 * batch * self.kv_heads * kv_len * self.head_dim


# Qwen2.5-VL-3B / -7B language models (their config.json text parts).
SHAPES = (
    Shape("3B", 2048, 36, 16, 2, 128, 11008, 151936),
    Shape("7B", 3584, 28, 28, 4, 128, 18944, 152064),
)
TOY = Shape("toy", 64, 2, 4, 2, 16, 128, 512)


class DecodeStep:
    """Random bf16 weights and a KV cache sized for `max_batch`; `__call__` is one step."""

    def __init__(self, shape: Shape, max_batch: int, kv_len: int, device: torch.device) -> None:
        self.shape = shape
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        make = {"device": device, "dtype": dtype}
        s = shape
        qkv = (s.heads + 2 * s.kv_heads) * s.head_dim
        self.layers = [
            {
                "qkv": torch.randn(s.hidden, qkv, **make) * 0.02,
                "o": torch.randn(s.heads * s.head_dim, s.hidden, **make) * 0.02,
                "gate_up": torch.randn(s.hidden, 2 * s.intermediate, **make) * 0.02,
                "down": torch.randn(s.intermediate, s.hidden, **make) * 0.02,
                "k": torch.randn(max_batch, s.kv_heads, kv_len, s.head_dim, **make),
                "v": torch.randn(max_batch, s.kv_heads, kv_len, s.head_dim, **make),
            }
            for _ in range(s.layers)
        ]
        self.lm_head = torch.randn(s.hidden, s.vocab, **make) * 0.02
        self.dtype = dtype

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        s, batch = self.shape, x.shape[0]
        q_size, kv_size = s.heads * s.head_dim, s.kv_heads * s.head_dim
        for layer in self.layers:
            h = F.rms_norm(x, (s.hidden,))
            q, _k, _v = (h @ layer["qkv"]).split([q_size, kv_size, kv_size], dim=-1)
            q = q.view(batch, s.heads, 1, s.head_dim)
            keys, values = layer["k"][:batch], layer["v"][:batch]
            attended = F.scaled_dot_product_attention(q, keys, values, enable_gqa=True)
            x = x + attended.reshape(batch, q_size) @ layer["o"]
            gate, up = (F.rms_norm(x, (s.hidden,)) @ layer["gate_up"]).chunk(2, dim=-1)
            x = x + (F.silu(gate) * up) @ layer["down"]
        return F.rms_norm(x, (s.hidden,)) @ self.lm_head


def time_step(step: DecodeStep, batch: int, iterations: int) -> dict[str, Any]:
    """Milliseconds per step: a CUDA graph replayed on a GPU, plain calls on the CPU."""
    x = torch.randn(batch, step.shape.hidden, device=step.lm_head.device, dtype=step.dtype)
    if x.device.type != "cuda":
        start = time.perf_counter()
        for _ in range(iterations):
            step(x)
        return {"step_ms": round((time.perf_counter() - start) * 1000 / iterations, 3)}
    graph, mode = _capture(step, x)
    run = graph.replay if graph is not None else (lambda: step(x))
    for _ in range(3):
        run()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        run()
    end.record()
    end.synchronize()
    return {"step_ms": round(start.elapsed_time(end) / iterations, 3), "mode": mode}


def _capture(step: DecodeStep, x: torch.Tensor) -> tuple[Any, str]:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(x)
    torch.cuda.current_stream().wait_stream(side)
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step(x)
    except RuntimeError as exc:  # some SDPA kernels cannot be captured: time eagerly
        return None, f"eager ({exc})"[:200]
    return graph, "cuda_graph"


def floor_rows(
    shape: Shape, batches: list[int], kv_len: int, device: torch.device, iterations: int
) -> list[dict[str, Any]]:
    step = DecodeStep(shape, max(batches), kv_len, device)
    rows = []
    for batch in batches:
        timed = time_step(step, batch, iterations)
        moved = shape.weight_bytes() + shape.kv_bytes(batch, kv_len)
        ms = timed["step_ms"]
        rows.append(
            {
                "shape": shape.name,
                "batch": batch,
                **timed,
                "us_per_token": round(ms * 1000 / batch, 1),
                "tb_per_s": round(moved / (ms / 1000) / 1e12, 2) if ms else None,
            }
        )
    del step
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return rows
