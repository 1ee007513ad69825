"""The CPU time Folio's vLLM plugin adds per generated token, measured in one process.

Runs with the vLLM venv's python (it imports vllm and torch), started by `bench.stops.benchmark`:

    VENV/bin/python -m bench.stops.plugin_cpu MODEL_DIR STEPS [BATCH ...] < texts.json

Drives FolioLogitsProcessor as vLLM's model runner does, once per decoding step: the batch's
output token lists grow by one token each, then `update_state` and `apply` over a logits
tensor of the served vocabulary. The batch holds one request per text (real healthy page
texts, tokenised with the served tokenizer), first none asking for the loop stop (the path
every request pays), then all asking. Prints JSON: this thread's CPU time per token for both.
Thread CPU time, unlike wall time on a shared machine, barely moves with other load. With
BATCH sizes (`bench stops --gpu-rates`), the texts are cycled to fill each batch and the
figures are per engine step as well: what the engine thread spends on the plugin each step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def run_in_venv(
    python: Path, model_dir: Path, steps: int, texts: list[str], *batches: int, timeout: float
) -> dict[str, Any]:
    """This module's figures, run by the vLLM venv's `python` (the caller's side)."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            str(python),
            "-m",
            "bench.stops.plugin_cpu",
            str(model_dir),
            str(steps),
            *map(str, batches),
        ],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=True,
        timeout=timeout,
    )
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def long_texts(pages: list[str], count: int, chars: int, stride: int = 1) -> list[str]:
    """`count` long real texts, one per request: pages joined (every `stride`th from the
    text's own start) until `chars` long."""
    texts = []
    for index in range(count):
        parts: list[str] = []
        while sum(map(len, parts)) < chars:
            parts.append(pages[(index + stride * len(parts)) % len(pages)])
        texts.append("\n\n".join(parts))
    return texts


def measure(model_dir: str, texts: list[str], steps: int, repeats: int = 5) -> dict[str, Any]:
    import torch
    from transformers import AutoConfig, AutoTokenizer
    from vllm import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate

    from app.vllm_plugin.behaviours import LOOP_STOP_ARG
    from app.vllm_plugin.processor import FolioLogitsProcessor

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    streams = [tokenizer.encode(text, add_special_tokens=False) for text in texts]
    steps = min(steps, *(len(ids) for ids in streams))
    config = AutoConfig.from_pretrained(model_dir)
    vocab = getattr(config, "vocab_size", None) or config.text_config.vocab_size
    model_config = SimpleNamespace(
        tokenizer=model_dir, tokenizer_revision=None, trust_remote_code=False
    )
    processor = FolioLogitsProcessor(
        SimpleNamespace(model_config=model_config), torch.device("cpu"), False
    )
    batch = len(streams)
    logits = torch.zeros(batch, vocab)

    def run(asked: bool) -> float:
        args = {LOOP_STOP_ARG: 1} if asked else None
        params = SamplingParams(max_tokens=steps, extra_args=args)
        outputs: list[list[int]] = [[] for _ in streams]
        added = [(i, params, None, outputs[i]) for i in range(batch)]
        processor.update_state(BatchUpdate(batch, removed=[], added=added, moved=[]))
        began = time.thread_time()
        for step in range(steps):
            for ids, output in zip(streams, outputs, strict=True):
                output.append(ids[step])
            processor.update_state(None)
            processor.apply(logits)
        spent = time.thread_time() - began
        processor.update_state(BatchUpdate(batch, removed=list(range(batch)), added=[], moved=[]))
        return spent * 1e6 / (steps * batch)

    run(True)  # warm-up: the tokenizer loads on the first request that asks
    plain = sorted(run(False) for _ in range(repeats))
    asked = sorted(run(True) for _ in range(repeats))
    return {
        "batch": batch,
        "steps": steps,
        "repeats": repeats,
        "us_per_token_not_asked": round(plain[repeats // 2], 2),
        "us_per_token_asked": round(asked[repeats // 2], 2),
        "us_per_token_asked_range": [round(asked[0], 2), round(asked[-1], 2)],
    }


def per_step(model_dir: str, texts: list[str], steps: int, batches: list[int]) -> dict[str, Any]:
    """Per batch size: the engine thread's CPU per step with every request asking, and with
    none asking (the plugin installed while Folio's client stop is relied on)."""
    found: dict[str, Any] = {}
    for batch in batches:
        filled = [texts[i % len(texts)] for i in range(batch)]
        row = measure(model_dir, filled, steps, repeats=3)
        row["us_per_step_asked"] = round(row["us_per_token_asked"] * batch, 1)
        row["us_per_step_not_asked"] = round(row["us_per_token_not_asked"] * batch, 1)
        found[str(batch)] = row
    return found


def main() -> None:
    model_dir, steps = sys.argv[1], int(sys.argv[2])
    batches = [int(b) for b in sys.argv[3:]]
    texts = json.load(sys.stdin)
    if batches:
        print(json.dumps(per_step(model_dir, texts, steps, batches)))
    else:
        print(json.dumps(measure(model_dir, texts, steps)))


if __name__ == "__main__":
    main()
