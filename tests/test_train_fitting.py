"""What the trainer does to a model so a run fits a GPU, checked on the tiny Qwen2-VL in bf16."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_train_dpo import TINY, train_extra_or_skip


def peft_model(dtype: Any) -> Any:
    from peft import get_peft_model
    from transformers import AutoModelForImageTextToText

    from app.train.options import TrainOptions
    from app.train.trainer import freeze_vision, lora_config

    model = AutoModelForImageTextToText.from_pretrained(TINY, dtype=dtype)
    freeze_vision(model)
    return get_peft_model(model, lora_config(TrainOptions()))


def adapter_dtypes(model: Any) -> set[Any]:
    return {p.dtype for p in model.parameters() if p.requires_grad}


def test_adapters_take_the_model_dtype_where_safe() -> None:
    train_extra_or_skip()
    import torch

    from app.train.fitting import adapter_dtype, cast_adapters

    model = peft_model(torch.bfloat16)
    assert adapter_dtypes(model) == {torch.float32}, "PEFT's default: float32 adapters"
    assert cast_adapters(model, adapter_dtype(torch.bfloat16, "model")) > 0
    assert adapter_dtypes(model) == {torch.bfloat16}
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert adapter_dtype(torch.float16, "model") == torch.float32, "fp16 updates underflow"
    assert adapter_dtype(torch.bfloat16, "float32") == torch.float32


@pytest.mark.parametrize("release", [False, True])
def test_a_frozen_vision_tower_leaves_the_backward(release: bool) -> None:
    train_extra_or_skip()
    import torch

    from app.train.fitting import release_frozen_vision
    from app.train.trainer import VISION_PARTS

    model = peft_model(torch.float32)
    model.enable_input_require_grads()  # what TRL does with PEFT and gradient checkpointing
    if release:
        assert release_frozen_vision(model, VISION_PARTS) == 1
    visual = model.base_model.model.model.visual
    patches = torch.zeros(16, visual.patch_embed.proj.weight.shape[1] * 14 * 14)
    patch_out = visual.patch_embed(patches)
    text_out = model.get_input_embeddings()(torch.tensor([[1, 2, 3]]))
    assert patch_out.requires_grad is not release
    assert text_out.requires_grad, "the text embedding keeps its hook: checkpointing needs it"
