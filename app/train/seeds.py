"""Several training seeds on the same pairs, the promotion gate choosing among them.

On the flywheel bench the training seed moved a tuned model's loop rate more than the method or
the dose did (docs/training.md), so one run is one draw. `--seeds N` trains N runs that differ
only in the training seed (the same pairs, the same held-out pages), the gate reads each on
those pages, and the run kept at `--out` is the promoted one that loops least there (fewest
loops, then the lowest CER); when none is promoted, the verdict stays "keep the base" and the
run that loops least is kept to inspect. The held-out pages chose the run, so they no longer
measure it without bias: read the kept model on other pages (`folio eval`) before serving it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.errors import TrainInputError
from app.train.card import write_card
from app.train.gate import PROMOTE
from app.train.options import TrainOptions
from app.train.plan import TrainPlan
from app.train.run import move_into_place, train_dpo


def train_seeds(
    plan: TrainPlan, options: TrainOptions, seeds: int, notify: Callable[[str], None] = print
) -> dict[str, Any]:
    """Train `seeds` runs (seeds `options.seed`, +1, ...) and keep the gate's choice."""
    if seeds <= 1:
        return train_dpo(plan, options, notify)
    if not options.gate.enabled:
        raise TrainInputError("--seeds needs the promotion gate to choose (drop --no-gate)")
    runs: list[tuple[int, Path, dict[str, Any]]] = []
    try:
        for seed in range(options.seed, options.seed + seeds):
            notify(f"training seed {seed} ({len(runs) + 1} of {seeds})")
            out = plan.out.with_name(f"{plan.out.name}.seed-{seed}")
            runs.append(
                (seed, out, train_dpo(replace(plan, out=out), replace(options, seed=seed), notify))
            )
        seed, chosen, card = min(runs, key=lambda run: rank(run[2]))
        card = {
            **card,
            "output": str(plan.out),
            "chosen_seed": seed,
            "seeds": [seed_row(s, c) for s, _, c in runs],
        }
        write_card(chosen, card)
        move_into_place(chosen, plan.out)
    finally:
        for _, out, _ in runs:
            shutil.rmtree(out, ignore_errors=True)
    return card


def rank(card: dict[str, Any]) -> tuple[bool, int, float]:
    """Promoted first, then fewer held-out loops, then a lower CER."""
    gate = card["gate"]
    cer = gate["tuned"]["cer"]
    return (gate["decision"] != PROMOTE, gate["tuned"]["loops"], 1.0 if cer is None else cer)


def seed_row(seed: int, card: dict[str, Any]) -> dict[str, Any]:
    gate = card["gate"]
    return {
        "seed": seed,
        "decision": gate["decision"],
        "loops": gate["tuned"]["loops"],
        "pages": gate["tuned"]["pages"],
        "cer": gate["tuned"]["cer"],
        "train_seconds": card["train_seconds"],
    }
