"""Run with the vLLM venv's python (tests/vllm_cpu/test_plugin_instances.py starts it):
builds FolioLogitsProcessor as vLLM's model runner does and prints what each instance did.

    VENV/bin/python -m tests.vllm_cpu.plugin_instances MODEL_DIR
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace
from typing import Any


def config(model_dir: str, async_scheduling: bool, named: list[str] | None) -> Any:
    model = SimpleNamespace(
        tokenizer=model_dir,
        tokenizer_revision=None,
        trust_remote_code=False,
        logits_processors=named,
    )
    scheduler = SimpleNamespace(async_scheduling=async_scheduling)
    return SimpleNamespace(model_config=model, scheduler_config=scheduler, speculative_config=None)


def two_instances(model_dir: str) -> dict[str, Any]:
    """Entry point and --logits-processors: two instances of one config, one request that
    asks to end after 2 tokens; which instance ends it."""
    import torch
    from vllm import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate

    from app.vllm_plugin.processor import FolioLogitsProcessor

    vllm_config = config(model_dir, False, None)
    built = [FolioLogitsProcessor(vllm_config, torch.device("cpu"), False) for _ in range(2)]
    output: list[int] = []
    params = SamplingParams(max_tokens=9, extra_args={"folio_stop_after": 2})
    for processor in built:
        processor.update_state(
            BatchUpdate(1, removed=[], added=[(0, params, None, output)], moved=[])
        )
    output += [5, 6]
    ended = []
    for processor in built:
        processor.update_state(None)
        logits = processor.apply(torch.zeros(1, 16))
        ended.append(int((logits[0] == 0).sum()) == 1)  # only one token left possible
    return {"ended_by": ended}


def refused(model_dir: str, async_scheduling: bool, named: list[str] | None) -> str | None:
    import torch

    from app.vllm_plugin.processor import FolioLogitsProcessor

    try:
        FolioLogitsProcessor(config(model_dir, async_scheduling, named), torch.device("cpu"), False)
    except RuntimeError as exc:
        return str(exc)
    return None


def main() -> None:
    model_dir = sys.argv[1]
    name = "app.vllm_plugin.processor:FolioLogitsProcessor"
    found = two_instances(model_dir) | {
        "refused_entry_point_async": refused(model_dir, True, None),
        "refused_named_async": refused(model_dir, True, [name]),
    }
    print(json.dumps(found))


if __name__ == "__main__":
    main()
