"""What makes a run fit a GPU, applied to the model TRL built (imports torch; trainer only).

Two fixes measured on an H200 (shared/notes/gpu.md section 3, docs/training-gpu.md):
- PEFT makes LoRA adapters float32 on a bf16 model and casts each adapted layer's input to
  float32 to meet them: a second, wider copy of every decoder activation. Adapters in the
  model's own dtype (bf16 keeps float32's range) drop the copies; float16 models keep float32
  adapters, whose updates would underflow in float16.
- With gradient checkpointing, transformers makes every input embedding's output require grad
  (TRL asks once more for PEFT); for a VLM that includes the vision tower's patch embedding, so
  a frozen tower keeps its activations for a backward pass that updates nothing in it. The
  Trainer does it again as training starts, hence a callback that runs after it.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import TrainerCallback

SAFE_ADAPTER_DTYPES = (torch.bfloat16, torch.float32)


def adapter_dtype(model_dtype: torch.dtype, wanted: str) -> torch.dtype:
    """The dtype LoRA adapters train in: the model's where that is safe, else float32."""
    if wanted == "model" and model_dtype in SAFE_ADAPTER_DTYPES:
        return model_dtype
    return torch.float32


def cast_adapters(model: Any, dtype: torch.dtype) -> int:
    """Cast the trainable (adapter) weights to `dtype` before the optimizer sees them."""
    cast = 0
    for param in model.parameters():
        if param.requires_grad and param.dtype != dtype:
            param.data = param.data.to(dtype)
            cast += param.numel()
    return cast


def release_frozen_vision(model: Any, vision_parts: tuple[str, ...]) -> int:
    """Drop the require-grad hooks on a frozen vision tower's embeddings; how many went."""
    vision_hooks = {
        id(module._forward_hooks)
        for name, module in model.named_modules()
        if any(part in name.split(".") for part in vision_parts)
        and not any(p.requires_grad for p in module.parameters())
    }
    removed = 0
    for module in model.modules():
        hooks = getattr(module, "_require_grads_hooks", None) or []
        for handle in list(hooks):
            if id(handle.hooks_dict_ref()) in vision_hooks:
                handle.remove()
                hooks.remove(handle)
                removed += 1
    return removed


class ReleaseFrozenVision(TrainerCallback):
    """At the start of training (after the Trainer enabled checkpointing), free the tower."""

    def __init__(self, vision_parts: tuple[str, ...]) -> None:
        self.vision_parts = vision_parts
        self.released = 0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        model = kw.get("model")
        if model is not None:
            self.released += release_frozen_vision(model, self.vision_parts)
