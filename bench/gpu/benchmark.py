"""`python -m bench gpu [--dry-run] [--out PATH]`: the loop stop's figures on a GPU machine.

One prepared script for a short turn on a GPU machine (no vLLM needed, torch only, no
network, under 5 minutes), writing its JSON after each part:
- decode_floor: one decode step of a Qwen2.5-VL-shaped language model (3B and 7B shapes,
  bf16, GQA, random weights, a 1,536-token KV cache a sequence), captured in a CUDA graph and
  replayed, at batch 32-256: a real vLLM step is at least this long;
- stop_engine_cost: what today's plugin spends on the host CPU per engine step (incremental
  detokenising and the loop detector for every request, as it runs inline on the engine
  thread), against the client stop's nothing;
- logits_writes: the CPU time of the plugin's logits writes behind ~32 ms of queued GPU work,
  the old scalar forms against the fills it uses now (a blocking form waits for the queue);
- client_parse: Folio's client reading vLLM's SSE chunks and running the detector, CPU per
  token on this host (no network: the HTTP stack's share is in `bench stops --gpu-rates`);
- train, when `bench/gpu/train.py` exists (`run(dry_run) -> dict`).
`--dry-run` runs every part at toy sizes on the CPU: the JSON's structure, for CI.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.gpu import parts as gpu_parts

RESULTS = Path(__file__).resolve().parents[1] / "results" / "gpu.json"
Part = Callable[..., dict[str, Any]]  # (dry_run[, progress=]) -> figures


def parts() -> list[tuple[str, Part]]:
    """The parts in running order; another module's part joins when it exists."""
    found: list[tuple[str, Part]] = [
        ("decode_floor", gpu_parts.decode_floor),
        ("stop_engine_cost", gpu_parts.stop_engine_cost),
        ("logits_writes", gpu_parts.logits_writes),
        ("client_parse", gpu_parts.client_parse),
    ]
    try:
        train = importlib.import_module("bench.gpu.train")
    except ModuleNotFoundError as exc:
        if exc.name != "bench.gpu.train":
            raise
    else:
        found.append(("train", train.run))
    return found


def run_parts(dry_run: bool, out: Path, only: Sequence[str] = ()) -> dict[str, Any]:
    report: dict[str, Any] = {"dry_run": dry_run, "host": gpu_parts.host()}
    for name, part in parts():
        if only and name not in only:
            continue
        began = time.monotonic()

        def partial(figures: dict[str, Any], name: str = name) -> None:
            report[name] = {**figures, "partial": True}
            write(out, report)

        try:
            wants_progress = "progress" in inspect.signature(part).parameters
            result = part(dry_run, progress=partial) if wants_progress else part(dry_run)
        except Exception as exc:  # one failed part must not lose the others' figures
            result = {"error": f"{type(exc).__name__}: {exc}"}
        result["seconds"] = round(time.monotonic() - began, 1)
        report[name] = result
        write(out, report)
    return report


def write(out: Path, report: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench gpu", description=__doc__)
    parser.add_argument("--dry-run", action="store_true", help="toy sizes on the CPU")
    default_out = Path(os.environ["OUT"]) / "gpu.json" if os.environ.get("OUT") else RESULTS
    parser.add_argument("--out", type=Path, default=default_out, help="JSON written here")
    parser.add_argument("--only", nargs="*", default=[], help="run only these parts")
    args = parser.parse_args(argv)
    report = run_parts(args.dry_run, args.out, args.only)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
