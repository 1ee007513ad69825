"""What a training run is asked to do. Defaults suit LoRA on a 2-8 B VLM on one GPU."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from app.train.gate import GatePolicy

Method = Literal["lora", "full"]
# Learning rates people use for DPO on VLMs: LoRA tolerates ten times more than a full tune.
DEFAULT_LEARNING_RATE = {"lora": 5e-5, "full": 5e-6}
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class GateOptions:
    """The promotion gate after training: which pages it reads and how it decides."""

    enabled: bool = True
    max_pages: int = 200  # held-out pairs' pages first, then pages the batch read cleanly
    max_tokens: int = 1024  # per page and model (a loop is stopped long before)
    batch: int = 8  # pages read at once
    policy: GatePolicy = field(default_factory=GatePolicy)


@dataclass(frozen=True)
class TrainOptions:
    method: Method = "lora"
    learning_rate: float | None = None  # None: DEFAULT_LEARNING_RATE[method]
    epochs: float = 3.0
    max_steps: int = -1  # > 0 overrides epochs
    batch_size: int = 4
    grad_accum: int = 1
    beta: float = 0.1
    # the SFT term on the chosen side (TRL's "sft" loss) beside sigmoid DPO: the flywheel bench's
    # recipe (docs/training.md, `app/train/dose.py`); 0 is plain DPO
    sft_weight: float = 1.0
    dpo_weight: float = 1.0  # 0 with sft_weight > 0: SFT on the chosen side only (a baseline)
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    freeze_vision: bool = True
    max_length: int = 4096
    held_out_share: float = 0.1
    seed: int = 42
    device: Literal["auto", "cpu", "cuda"] = "auto"
    gradient_checkpointing: bool | None = None  # None: on for CUDA, off on CPU
    adapter_dtype: Literal["model", "float32"] = "model"  # "model": bf16 adapters on a bf16 model
    max_image_tokens: int | None = None  # None: the processor's own image budget
    memory_check: bool = True  # the preflight: fit the batch to the device, or refuse
    memory_budget_gib: float | None = None  # at most this much memory; None: what is free
    # Leave a frozen vision tower out of the backward (False only to measure the old behaviour).
    release_frozen_vision: bool = True
    gate: GateOptions = field(default_factory=GateOptions)

    @property
    def lr(self) -> float:
        return self.learning_rate or DEFAULT_LEARNING_RATE[self.method]

    def losses(self) -> list[tuple[str, float]]:
        """TRL's loss terms and their weights: sigmoid DPO, the SFT term, or both."""
        terms = [("sigmoid", self.dpo_weight), ("sft", self.sft_weight)]
        return [(name, weight) for name, weight in terms if weight > 0]

    def loss_text(self) -> str:
        """The loss as a person reads it: `DPO beta 0.1 + SFT`, `DPO beta 0.1 only`."""
        names = {"sigmoid": f"DPO beta {self.beta:g}", "sft": "SFT"}
        terms = [names[n] + (f" x{w:g}" if w != 1 else "") for n, w in self.losses()]
        return " + ".join(terms) if len(terms) > 1 else f"{terms[0]} only"

    def checkpointing_on(self, device: str) -> bool:
        if self.gradient_checkpointing is None:
            return device == "cuda"
        return self.gradient_checkpointing

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "learning_rate": self.lr}
