"""The checked input of a training run, shared by the run and the promotion gate after it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.train.pairs import Split


@dataclass(frozen=True)
class TrainPlan:
    """What will be trained on and what is held out."""

    folders: list[Path]
    base: Path
    base_config: dict[str, Any]
    out: Path
    split: Split
