"""The DPO run itself: TRL's DPOTrainer on the pairs, LoRA through PEFT or a full tune.

Imports torch, transformers, TRL and PEFT (the `folio[train]` extra); only
`app.train.run` imports this module, and only once the input has been checked.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor, TrainerCallback
from trl import DPOConfig, DPOTrainer

from app.errors import TrainInputError
from app.train.options import LORA_TARGETS, TrainOptions
from app.train.pairs import Pair

log = logging.getLogger(__name__)
VISION_PARTS = ("visual", "vision_tower", "vision_model", "multi_modal_projector")


class CurveRecorder(TrainerCallback):
    """Keeps the logged loss and reward figures of every step for the training card."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        if logs and "loss" in logs:
            self.rows.append({"step": float(state.global_step), **_numbers(logs)})


def _numbers(logs: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in logs.items() if isinstance(v, int | float)}


def pick_device(wanted: str) -> str:
    if wanted == "cuda" and not torch.cuda.is_available():
        raise TrainInputError("--device cuda asked for, but torch sees no CUDA device")
    if wanted == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return wanted


def load_processor(base: Path) -> Any:
    return AutoProcessor.from_pretrained(base)


def check_lengths(processor: Any, pairs: Sequence[Pair], max_length: int) -> int:
    """Longest prompt in tokens (image tokens included); raises when max_length would cut one."""
    longest = 0
    for pair in pairs:
        text = processor.apply_chat_template(pair.record["prompt"], add_generation_prompt=True)
        images = [Image.open(p).convert("RGB") for p in pair.image_paths]
        ids = processor(text=[text], images=images, return_tensors="pt")["input_ids"]
        longest = max(longest, int(ids.shape[-1]))
    if longest >= max_length:
        raise TrainInputError(
            f"--max-length {max_length} would cut the image tokens: the longest prompt is "
            f"{longest} tokens with its image; raise --max-length or lower the image size"
        )
    return longest


def to_dataset(pairs: Sequence[Pair]) -> Dataset:
    rows = [
        {
            "images": [Image.open(p).convert("RGB") for p in pair.image_paths],
            "prompt": pair.record["prompt"],
            "chosen": pair.record["chosen"],
            "rejected": pair.record["rejected"],
        }
        for pair in pairs
    ]
    return Dataset.from_list(rows)


def load_model(base: Path, device: str) -> Any:
    # Train in float32 on CPU (bf16 matmuls there are slow and lossy); bf16 on GPU.
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model: Any = AutoModelForImageTextToText.from_pretrained(base, dtype=dtype)
    return model.to(device)


def freeze_vision(model: Any) -> int:
    frozen = 0
    for name, param in model.named_parameters():
        if any(part in name for part in VISION_PARTS):
            param.requires_grad_(False)
            frozen += param.numel()
    return frozen


def lora_config(options: TrainOptions) -> Any:
    from peft import LoraConfig

    # Only the language model's projections: the vision tower stays as it was.
    pattern = r".*language_model.*\.(" + "|".join(LORA_TARGETS) + r")$"
    return LoraConfig(
        r=options.lora_rank,
        lora_alpha=options.lora_alpha,
        lora_dropout=options.lora_dropout,
        target_modules=pattern,
        task_type="CAUSAL_LM",
    )


def dpo_config(options: TrainOptions, device: str, work: Path) -> DPOConfig:
    losses = ["sigmoid", "sft"] if options.sft_weight > 0 else ["sigmoid"]
    return DPOConfig(
        output_dir=str(work),
        per_device_train_batch_size=options.batch_size,
        gradient_accumulation_steps=options.grad_accum,
        learning_rate=options.lr,
        num_train_epochs=options.epochs,
        max_steps=options.max_steps,
        beta=options.beta,
        loss_type=losses,
        loss_weights=[1.0, options.sft_weight] if options.sft_weight > 0 else None,
        max_length=options.max_length,
        bf16=device == "cuda" and torch.cuda.is_bf16_supported(),
        use_cpu=device == "cpu",
        gradient_checkpointing=options.gradient_checkpointing,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=options.seed,
        data_seed=options.seed,
        dataloader_num_workers=0,
        remove_unused_columns=False,
    )


def train(
    base: Path, pairs: Sequence[Pair], options: TrainOptions, work: Path
) -> tuple[Any, Any, list[dict[str, float]]]:
    """Run DPO; return the trained model (LoRA merged in), the processor and the curves."""
    device = pick_device(options.device)
    processor = load_processor(base)
    check_lengths(processor, pairs, options.max_length)
    model = load_model(base, device)
    if options.freeze_vision:
        freeze_vision(model)
    recorder = CurveRecorder()
    trainer = DPOTrainer(
        model=model,
        args=dpo_config(options, device, work),
        train_dataset=to_dataset(pairs),
        processing_class=processor,
        peft_config=lora_config(options) if options.method == "lora" else None,
        callbacks=[recorder],
    )
    trainer.train()
    trained: Any = trainer.model
    if options.method == "lora":
        trained = trained.merge_and_unload()
    return trained, processor, recorder.rows


def save_for_serving(model: Any, processor: Any, base_config: dict[str, Any], dest: Path) -> None:
    """Merged weights in the base model's dtype, with the processor, tokenizer and template."""
    dtype_name = base_config.get("dtype") or base_config.get("torch_dtype") or "bfloat16"
    model = model.to("cpu").to(getattr(torch, str(dtype_name), torch.bfloat16))
    model.save_pretrained(dest, safe_serialization=True)
    processor.save_pretrained(dest)
