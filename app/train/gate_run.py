"""The promotion gate after training: the base and the tuned model read the same held-out
pages, and the verdict is written beside the tuned model (`gate.py` decides)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from app.train.gate import Verdict, decide
from app.train.gate_pages import gate_pages
from app.train.gate_report import write_verdict
from app.train.options import GateOptions
from app.train.plan import TrainPlan


def run_gate(
    plan: TrainPlan,
    options: GateOptions,
    tuned: Path,
    device: str,
    notify: Callable[[str], None],
    dest: Path | None = None,
) -> Verdict:
    """`tuned`: the saved, servable folder of the tuned model (what would be served); the
    verdict is written there, or in `dest`."""
    from app.train import reading, trainer

    pages = gate_pages(plan.folders, plan.split.held_out, plan.split.train, options.max_pages)
    origins = dict(Counter(page.origin for page in pages))
    notify(f"gate: base and tuned model read {len(pages)} held-out pages {origins}")
    processor = trainer.load_processor(plan.base)
    began = time.monotonic()
    read = (options.max_tokens, notify, options.batch)
    base = reading.read_pages(plan.base, processor, pages, device, *read)
    tuned_reads = reading.read_pages(tuned, processor, pages, device, *read)
    verdict = decide(base, tuned_reads, options.policy)
    how = {
        "device": device,
        "max_tokens": options.max_tokens,
        "batch": options.batch,
        "pages_by_origin": origins,
        "seconds": round(time.monotonic() - began, 2),
    }
    write_verdict(dest or tuned, verdict, base, tuned_reads, how)
    return verdict
