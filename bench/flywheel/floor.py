"""The compute floor of one generated token of the committed base, on this CPU, in plain torch.

`python -m bench flywheel-speed` measures what the vLLM CPU server spends a generated token
(its model worker's CPU over the tokens it generated). This module isolates what the model
itself needs: one decode step of the base's text model (`data.TEXT`: 6 layers, hidden 256,
4 query heads and 2 KV heads of 64, MLP 768, 263-token vocabulary) for a batch of sequences at
a given context, as the bare matrix products and one attention call a layer, timed with one
torch thread (the server's model worker runs one). Nothing here pages a KV cache, schedules,
samples or streams, so it is a lower bound on any server's cost a token, not an estimate of it.
"""

from __future__ import annotations

import time
from typing import Any

from bench.flywheel import data


def _shapes() -> tuple[int, int, int, int, int, int]:
    text = data.TEXT
    hidden = int(text["hidden_size"])  # type: ignore[arg-type]
    heads = int(text["num_attention_heads"])  # type: ignore[arg-type]
    kv_heads = int(text["num_key_value_heads"])  # type: ignore[arg-type]
    return (hidden, heads, kv_heads, hidden // heads, int(text["intermediate_size"]),  # type: ignore[arg-type]
            int(text["num_hidden_layers"]))  # type: ignore[arg-type]  # fmt: skip


def _best(step: Any, repeats: int) -> float:
    """The fastest of `repeats` timed calls (the floor: the least the machine's noise added)."""
    step()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    return min(times)


def per_token_floor(batch: int = 256, context: int = 580, vocab: int = 263,
                    dtype: str = "bfloat16", repeats: int = 20) -> dict[str, Any]:  # fmt: skip
    """Microseconds a generated token needs for the text model's matrix products and its
    attention, with `batch` sequences a step, each attending to `context` earlier tokens (a
    page's image, at most 280 tokens, and its text so far)."""
    import torch

    torch.set_num_threads(1)
    kind = getattr(torch, dtype)
    hidden, heads, kv_heads, head_dim, mlp, layers = _shapes()
    x = torch.randn(batch, hidden, dtype=kind)
    weights = [torch.randn(hidden, out, dtype=kind) for out in
               (heads * head_dim, kv_heads * head_dim, kv_heads * head_dim)]  # fmt: skip
    o_proj = torch.randn(heads * head_dim, hidden, dtype=kind)
    up = [torch.randn(hidden, mlp, dtype=kind) for _ in range(2)]
    down = torch.randn(mlp, hidden, dtype=kind)
    head = torch.randn(hidden, vocab, dtype=kind)
    # grouped queries: each KV head's 2 query heads as one 2-row product against its keys
    query = torch.randn(batch, kv_heads, heads // kv_heads, head_dim, dtype=kind)
    keys_t = torch.randn(batch, kv_heads, head_dim, context, dtype=kind)
    values = torch.randn(batch, kv_heads, context, head_dim, dtype=kind)

    def products() -> None:
        for _ in range(layers):
            for weight in weights:
                x @ weight
            (x @ o_proj)
            gate, lift = (x @ w for w in up)
            (torch.nn.functional.silu(gate) * lift) @ down
        x @ head

    def attention() -> None:
        # as two batched products: torch's scaled_dot_product_attention took 6x longer in
        # bfloat16 for this decode shape (1,212 against 206 us a token, 2026-11-27)
        for _ in range(layers):
            scores = torch.softmax((query @ keys_t).float() * head_dim**-0.5, dim=-1)
            scores.to(kind) @ values

    with torch.inference_mode():
        gemm = _best(products, repeats) / batch * 1e6
        attend = _best(attention, repeats) / batch * 1e6
    return {"batch": batch, "context": context, "dtype": dtype, "threads": 1,
            "products_us_per_token": round(gemm, 1), "attention_us_per_token": round(attend, 1),
            "floor_us_per_token": round(gemm + attend, 1)}  # fmt: skip
