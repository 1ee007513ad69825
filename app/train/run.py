"""`train_dpo`: check the input, train, and write the served folder beside its final place.

Nothing is written at `out` until the end: the model goes to `out.partial-*` first and is
renamed into place once complete, so a crash never leaves a half-written model folder.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app.errors import MissingExtraError, TrainInputError
from app.train.base_model import read_base_config
from app.train.card import write_card
from app.train.dose import dose_note
from app.train.gate_report import verdict_summary
from app.train.gate_run import run_gate
from app.train.layout import finish_layout
from app.train.options import TrainOptions
from app.train.pairs import (
    data_hashes,
    held_out_pages,
    load_pairs,
    pair_counts,
    split_held_out,
)
from app.train.plan import TrainPlan

HELD_OUT_FILE = "held_out_pages.json"


def prepare(
    folders: Sequence[Path], base: Path, out: Path, options: TrainOptions, *, force: bool
) -> TrainPlan:
    """Every check that needs no torch; raises TrainInputError before anything is written."""
    if out.exists() and not force:
        raise TrainInputError(f"{out} already exists (choose another --out, or --force)")
    if out.resolve() == base.resolve():
        raise TrainInputError("--out must differ from --base-model")
    if not options.losses():
        raise TrainInputError("nothing to train: --dpo-weight and --sft-weight are both 0")
    config = read_base_config(base)
    pairs = load_pairs(list(folders))
    split = split_held_out(pairs, options.held_out_share, options.seed)
    if len(split.train) < options.batch_size:
        raise TrainInputError(
            f"{len(split.train)} training pair(s) after holding out pages: fewer than one "
            f"batch of {options.batch_size} (lower --batch-size or export more pairs)"
        )
    return TrainPlan(list(folders), base, config, out, split)


def train_dpo(
    plan: TrainPlan, options: TrainOptions, notify: Callable[[str], None] = print
) -> dict[str, Any]:
    """Train and write the folder at `plan.out`; return the training card."""
    trainer = _import_trainer()
    partial = plan.out.with_name(f"{plan.out.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        began = time.monotonic()
        result = trainer.train(
            plan.base,
            plan.split.train,
            options,
            partial / "checkpoints",
            base_config=plan.base_config,
            notify=notify,
        )
        processor, curves, memory = result.processor, result.curves, result.memory
        seconds = time.monotonic() - began
        shutil.rmtree(partial / "checkpoints", ignore_errors=True)
        trainer.save_for_serving(result.model, processor, plan.base_config, partial)
        del result  # the gate loads the base and the saved model: no third copy beside them
        trainer.release_memory()
        finish_layout(plan.base, partial, plan.base_config.get("model_type"))
        held = held_out_pages(plan.split.held_out)
        (partial / HELD_OUT_FILE).write_text(json.dumps(held, indent=2) + "\n", encoding="utf-8")
        device = trainer.pick_device(options.device)
        card = _card(plan, options, curves, seconds, device, held)
        card["memory"] = memory
        if options.gate.enabled:
            verdict = run_gate(plan, options.gate, partial, device, notify)
            card["gate"] = verdict_summary(verdict)
        write_card(partial, card)
        move_into_place(partial, plan.out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return card


def _import_trainer() -> Any:
    try:
        from app.train import trainer
    except ImportError as exc:
        raise MissingExtraError(
            f"training needs the train extra: pip install 'folio[train]' ({exc})"
        ) from exc
    return trainer


def move_into_place(partial: Path, out: Path) -> None:
    if out.exists():
        old = out.with_name(f"{out.name}.old-{os.getpid()}")
        out.rename(old)
        partial.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        partial.rename(out)


def _card(
    plan: TrainPlan,
    options: TrainOptions,
    curves: list[dict[str, float]],
    seconds: float,
    device: str,
    held: list[dict[str, Any]],
) -> dict[str, Any]:
    split = plan.split
    return {
        "output": str(plan.out),
        "base_model": str(plan.base),
        "base_model_type": plan.base_config.get("model_type"),
        "device": device,
        "config": options.to_dict(),
        "data": {
            "folders": [str(f) for f in plan.folders],
            "sha256": data_hashes(plan.folders, [*split.train, *split.held_out]),
        },
        "pairs": {
            "train": len(split.train),
            "held_out": len(split.held_out),
            "held_out_pages": len(held),
            **pair_counts(split.train),
        },
        "dose": dose_note(len(split.train)),
        "steps": int(curves[-1]["step"]) if curves else 0,
        "train_seconds": round(seconds, 2),
        "curves": curves,
    }
