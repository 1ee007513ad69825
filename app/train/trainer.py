"""The DPO run itself: TRL's DPOTrainer on the pairs, LoRA through PEFT or a full tune.

Imports torch, transformers, TRL and PEFT (the `folio[train]` extra); only
`app.train.run` imports this module, and only once the input has been checked.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from PIL import Image
from transformers import (
    AutoConfig,
    AutoModelForImageTextToText,
    AutoProcessor,
    TrainerCallback,
)
from trl import DPOConfig, DPOTrainer

from app.errors import TrainInputError
from app.train.fitting import ReleaseFrozenVision, adapter_dtype, cast_adapters
from app.train.memory import Run, Shapes
from app.train.options import LORA_TARGETS, TrainOptions
from app.train.pairs import Pair
from app.train.peak import PeakMemory
from app.train.preflight import Fit, available_ram, fit_batch
from app.train.shapes import measure_shapes

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


def load_processor(base: Path, max_image_tokens: int | None = None) -> Any:
    """The base model's processor; with a budget, images are resized to at most that many tokens."""
    processor = AutoProcessor.from_pretrained(base)
    if max_image_tokens is not None:
        image = processor.image_processor
        side = int(getattr(image, "patch_size", 14)) * int(getattr(image, "merge_size", 1))
        if not isinstance(getattr(image, "size", None), dict) or "longest_edge" not in image.size:
            raise TrainInputError(
                f"--max-image-tokens: {type(image).__name__} has no pixel budget to set"
            )
        image.size = {**image.size, "longest_edge": max_image_tokens * side * side}
    return processor


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


def model_dtype(device: str) -> torch.dtype:
    # Train in float32 on CPU (bf16 matmuls there are slow and lossy); bf16 on GPU.
    return torch.bfloat16 if device == "cuda" else torch.float32


def load_model(base: Path, device: str) -> Any:
    model: Any = AutoModelForImageTextToText.from_pretrained(base, dtype=model_dtype(device))
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
    losses = options.losses()
    return DPOConfig(
        output_dir=str(work),
        per_device_train_batch_size=options.batch_size,
        gradient_accumulation_steps=options.grad_accum,
        learning_rate=options.lr,
        num_train_epochs=options.epochs,
        max_steps=options.max_steps,
        beta=options.beta,
        loss_type=[name for name, _ in losses],
        loss_weights=[weight for _, weight in losses],
        max_length=options.max_length,
        bf16=device == "cuda" and torch.cuda.is_bf16_supported(),
        use_cpu=device == "cpu",
        gradient_checkpointing=options.checkpointing_on(device),
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=options.seed,
        data_seed=options.seed,
        dataloader_num_workers=0,
        remove_unused_columns=False,
    )


@dataclass
class TrainResult:
    """The trained model (LoRA merged in), its processor, the curves and the memory figures."""

    model: Any
    processor: Any
    curves: list[dict[str, float]]
    memory: dict[str, Any]


def train(
    base: Path,
    pairs: Sequence[Pair],
    options: TrainOptions,
    work: Path,
    *,
    base_config: dict[str, Any],
    notify: Callable[[str], None] = log.info,
    load: Callable[[Path, str], Any] | None = None,
) -> TrainResult:
    """Run DPO after the memory preflight, which may lower the batch (and says so)."""
    device = pick_device(options.device)
    processor = load_processor(base, options.max_image_tokens)
    shapes = measure_shapes(processor, pairs, options.max_length)
    options, fit = preflight(full_config(base, base_config), shapes, options, device)
    notify(f"memory: {fit.note}")
    model = (load or load_model)(base, device)
    if options.freeze_vision:
        freeze_vision(model)
    recorder, peak = CurveRecorder(), PeakMemory(device)
    frees_vision = options.freeze_vision and options.release_frozen_vision
    release = ReleaseFrozenVision(VISION_PARTS if frees_vision else ())
    trainer = DPOTrainer(
        model=model,
        args=dpo_config(options, device, work),
        train_dataset=to_dataset(pairs),
        processing_class=processor,
        peft_config=lora_config(options) if options.method == "lora" else None,
        callbacks=[recorder, release, peak],
    )
    fit_adapters(trainer.model, options)
    trainer.train()
    trained: Any = trainer.model
    trained = trained.merge_and_unload() if options.method == "lora" else trained
    return TrainResult(trained, processor, recorder.rows, _memory(shapes, fit, peak, release))


def _memory(
    shapes: Shapes, fit: Fit, peak: PeakMemory, release: ReleaseFrozenVision
) -> dict[str, Any]:
    """The training card's memory section: the estimate beside what was measured."""
    return {
        "shapes": asdict(shapes),
        "preflight": fit.to_dict(),
        "measured_peak_bytes": peak.peak_bytes,
        "measured_by": peak.method,
        "vision_hooks_released": release.released,
    }


def preflight(
    config: dict[str, Any], shapes: Shapes, options: TrainOptions, device: str
) -> tuple[TrainOptions, Fit]:
    """The options the run will use (batch and accumulation fitted to the free memory)."""
    run = memory_run(options, device)
    free = free_memory(device, options.memory_budget_gib) if options.memory_check else None
    fit = fit_batch(config, shapes, run, options.grad_accum, free)
    fitted = replace(options, batch_size=fit.batch_size, grad_accum=fit.grad_accum)
    return fitted, fit


def full_config(base: Path, config: dict[str, Any]) -> dict[str, Any]:
    """config.json with transformers' defaults filled in (a config may list only what differs)."""
    try:
        loaded: dict[str, Any] = AutoConfig.from_pretrained(base).to_dict()
    except (OSError, ValueError, KeyError):
        return config
    return loaded


def memory_run(options: TrainOptions, device: str) -> Run:
    """The estimator's view of a run: what the trainer will do on this device."""
    weight = model_dtype(device)
    adapter = adapter_dtype(weight, options.adapter_dtype)
    return Run(
        device="cuda" if device == "cuda" else "cpu",
        method=options.method,
        batch_size=options.batch_size,
        max_length=options.max_length,
        gradient_checkpointing=options.checkpointing_on(device),
        lora_rank=options.lora_rank,
        train_vision=not options.freeze_vision,
        weight_bytes=weight.itemsize,
        adapter_bytes=adapter.itemsize,
        vision_hook=not options.release_frozen_vision,
    )


def free_memory(device: str, budget_gib: float | None) -> int | None:
    """What the run may use: the device's free memory, capped by the budget asked for."""
    free = int(torch.cuda.mem_get_info()[0]) if device == "cuda" else available_ram()
    if budget_gib is None:
        return free
    budget = int(budget_gib * 1024**3)
    return budget if free is None else min(free, budget)


def fit_adapters(model: Any, options: TrainOptions) -> None:
    """LoRA adapters in the model's dtype where safe (before the optimizer is made)."""
    if options.method == "lora":
        cast_adapters(model, adapter_dtype(next(model.parameters()).dtype, options.adapter_dtype))


def save_for_serving(model: Any, processor: Any, base_config: dict[str, Any], dest: Path) -> None:
    """Merged weights in the base model's dtype, with the processor, tokenizer and template."""
    dtype_name = base_config.get("dtype") or base_config.get("torch_dtype") or "bfloat16"
    model = model.to("cpu").to(getattr(torch, str(dtype_name), torch.bfloat16))
    model.save_pretrained(dest, safe_serialization=True)
    processor.save_pretrained(dest)


def release_memory() -> None:
    """Give freed tensors back (CUDA keeps them cached for the process otherwise)."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
