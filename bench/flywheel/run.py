"""`python -m bench flywheel [--smoke] [--seeds 0 1 2] [--out DIR] [--weights FILE]`.

The flywheel end to end, through Folio's own commands on a real vLLM CPU server: the taught
model (`--weights`, default the committed `model/model.safetensors`) is served and run as a
Folio job over training pages; its loops are exported with `folio export-dpo --truth` (the
chosen side is the page's ground truth); then per seed `folio train-dpo` trains a DPO arm and
an SFT-only arm (`--dpo-weight 0 --sft-weight 1`: the chosen side alone, on the same pairs),
each is served and compared with the base by `folio eval` on held-out pages: first-attempt
degeneration rate and CER, mean and spread over the seeds (`report.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.environment import REPO, describe, machine_info, write_results
from bench.flywheel import data, pages, report
from bench.flywheel.model import COMMITTED, assemble, sha256_file


@dataclass(frozen=True)
class Size:
    """How much the bench does: pages, training steps and the recipe of each arm."""

    train_pages: int
    eval_pages: int
    steps: int
    batch: int = 4
    learning_rate: float = 1e-4
    beta: float = 0.1
    sft_weight: float = 0.0  # the DPO arm's SFT term (the paper's recipe adds one)
    loop_kinds: tuple[str, ...] = ()  # train on the pairs of these loop kinds only; () all
    trained_arms: tuple[str, ...] = ("dpo", "sft")
    served_arms: tuple[str, ...] = ("dpo", "sft")  # the trained arms served and evaluated


FULL = Size(train_pages=64, eval_pages=40, steps=8)  # ~27 min here with a model that reads
# The smoke run checks this bench's own stages: pages, the base's job and eval, the export.
# Training, serving and reading a DPO and an SFT-only arm through `folio train-dpo` are
# `flywheel-arms`' stages too, which its smoke run covers (tests/test_flywheel_smoke.py runs
# both on one base server): each training costs a torch start.
SMOKE = Size(train_pages=6, eval_pages=4, steps=2, trained_arms=(), served_arms=())
PAGE_SEED = 1234  # the pages are the same for every training seed


class Stages:
    """Prints one line per stage with its time, and keeps the timings for the results."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.seconds: dict[str, float] = {}

    def run(self, name: str, work: Any, *args: Any, **kwargs: Any) -> Any:
        print(f"[{time.monotonic() - self.began:6.0f}s] {name} ...", flush=True)
        began = time.monotonic()
        result = work(*args, **kwargs)
        self.seconds[name] = round(time.monotonic() - began, 1)
        print(f"[{time.monotonic() - self.began:6.0f}s] {name}: {self.seconds[name]}s", flush=True)
        return result

    def elapsed(self) -> float:
        return time.monotonic() - self.began


def folio(work: Path, *args: str, ok: Sequence[int] = (0,)) -> str:
    """A `folio` command run in the work folder (its folio.toml); raises on an unexpected code."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    env.pop("FOLIO_CONFIG", None)
    command = [sys.executable, "-c", "from app.cli.main import main; main()", *args]
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
    if done.returncode not in ok:
        raise RuntimeError(f"folio {' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return done.stdout


def last_job(database: Path) -> str:
    with sqlite3.connect(database) as connection:
        row = connection.execute("SELECT id FROM jobs ORDER BY created_at DESC LIMIT 1").fetchone()
    return str(row[0])


def make_pages(work: Path, size: Size) -> dict[str, Any]:
    prepared = data.prepare(work / "data")
    text = json.loads((work / "data" / "text.json").read_text())
    atlas = np.load(work / "data" / "atlas.npy")
    rng = random.Random(PAGE_SEED)
    hashes = {}
    for split, count in (("train", size.train_pages), ("held_out", size.eval_pages)):
        chosen = pages.choose(text[split], count, split, rng)
        hashes[split] = pages.write_pages(
            chosen, atlas, work / "pages" / split, work / "truth" / split
        )
    return {
        "text_sha256": prepared["text"]["sha256"],  # type: ignore[index]
        "atlas_sha256": prepared["atlas_sha256"],
        "page_list_sha256": hashes,
        "page_seed": PAGE_SEED,
    }


def start_server(model_dir: Path, port: int, log: Path) -> Any:
    """`model_dir` on a vLLM CPU server at `port` (stopped by the caller)."""
    from tests.vllm_cpu.server import VllmServer

    return VllmServer(model_dir, port=port, log_path=log).start()


def evaluate(work: Path, label: str) -> dict[str, Any]:
    """The held-out pages through the flywheel plan on the endpoint `label`: `folio eval`'s
    figures (a failed page, e.g. one cut at the token cap, scores as an empty answer)."""
    out = work / "eval" / label
    folio(work, "eval", "pages/held_out", "--arm", f"{label}={pages.PLAN}@{label}",
          "--truth", "truth/held_out", "--out", str(out))  # fmt: skip
    arm = json.loads((out / "eval.json").read_text())["arms"][0]
    keep = ("pages", "pages_failed", "degeneration_rate_first_attempt", "degeneration_rate_final",
            "cer", "word_f1", "tokens_per_page", "pages_with_truth")  # fmt: skip
    return {key: arm[key] for key in keep}


def serve_and_evaluate(work: Path, label: str, port: int) -> dict[str, Any]:
    server = start_server(work / "models" / label, port, work / f"vllm-{label}.log")
    try:
        return evaluate(work, label)
    finally:
        server.stop()


def select_pairs(work: Path, kinds: Sequence[str]) -> int:
    """`pairs/` as exported, or `pairs-selected/` with the pairs of `kinds` only; the count."""
    rows = (work / "pairs" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    if kinds:
        rows = [r for r in rows if json.loads(r)["metadata"]["rejected_verdict"]["kind"] in kinds]
        folder = work / "pairs-selected"
        folder.mkdir(exist_ok=True)
        (folder / "train.jsonl").write_text("".join(f"{r}\n" for r in rows), encoding="utf-8")
        if not (folder / "images").exists():
            (folder / "images").symlink_to(work / "pairs" / "images")
    return len(rows)


def pairs_by_kind(work: Path) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for row in (work / "pairs" / "train.jsonl").read_text(encoding="utf-8").splitlines():
        kind = json.loads(row)["metadata"]["rejected_verdict"]["kind"]
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def train(work: Path, label: str, size: Size, seed: int, sft_only: bool) -> dict[str, Any]:
    weights = ["--dpo-weight", "0", "--sft-weight", "1"] if sft_only else [
        "--beta", str(size.beta), "--sft-weight", str(size.sft_weight)]  # fmt: skip
    folder = "pairs-selected" if size.loop_kinds else "pairs"
    folio(work, "train-dpo", folder, "--base-model", "models/base", "--out", f"models/{label}",
          "--method", "full", "--learning-rate", str(size.learning_rate),
          "--max-steps", str(size.steps), "--batch-size", str(size.batch), "--held-out", "0",
          "--seed", str(seed), "--device", "cpu", "--max-length", "1024", "--force",
          "--no-gate",
          *weights)  # fmt: skip
    card = json.loads((work / "models" / label / "training_card.json").read_text())
    return {"steps": card["steps"], "train_seconds": card["train_seconds"],
            "final": card["curves"][-1] if card["curves"] else None}  # fmt: skip


def fresh_folder(work: Path) -> None:
    """An empty work folder: an earlier run's (it has a folio.toml) is removed, since a job
    over the same pages in its database would be resumed, not run; anything else is refused."""
    if work.exists() and any(work.iterdir()):
        if not (work / "folio.toml").is_file():
            raise SystemExit(f"{work} is not empty and not a flywheel work folder: choose --out")
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)


def beside(weights: Path) -> dict[str, str]:
    """The files kept with the weights (the model card, sft.json) and their sha256."""
    files = sorted(p for p in weights.parent.iterdir() if p.is_file() and p != weights)
    return {str(p): sha256_file(p) for p in files}


def run(size: Size, seeds: Sequence[int], work: Path, weights: Path, base_url: str | None = None
        ) -> dict[str, Any]:  # fmt: skip
    """The bench; `base_url`: the weights already served there as the base (no server started)."""
    from tests.vllm_cpu.server import SERVED_MODEL_NAME, free_port

    stages = Stages()
    fresh_folder(work)
    hashes = stages.run("pages", make_pages, work, size)
    card = stages.run("assemble", assemble, weights, work / "models" / "base")
    labels = ["base"] + [f"{arm}-s{seed}" for seed in seeds for arm in ("dpo", "sft")]
    ports = {label: free_port() for label in labels}
    endpoints = {label: f"http://127.0.0.1:{port}/v1" for label, port in ports.items()}
    endpoints["base"] = base_url or endpoints["base"]
    models = dict.fromkeys(labels, SERVED_MODEL_NAME)
    config = pages.settings(f"sqlite:///{work / 'folio.db'}", endpoints, models)
    (work / "folio.toml").write_text(pages.toml_text(config))
    server = None if base_url else stages.run(
        "serve base", start_server, work / "models" / "base", ports["base"],
        work / "vllm-base.log")  # fmt: skip
    try:
        stages.run("folio run (train pages)", folio, work, "run", "pages/train", "--out",
                   "run-train", ok=(0, 3))  # fmt: skip
        job = last_job(work / "folio.db")  # before eval adds its own job
        arms: dict[str, Any] = {"base": stages.run("eval base", evaluate, work, "base")}
    finally:
        if server is not None:
            server.stop()
    exported = stages.run("folio export-dpo --truth", folio, work, "export-dpo", job, "--out",
                          "pairs", "--truth", "truth/train")  # fmt: skip
    pairs = select_pairs(work, size.loop_kinds)
    if not pairs:
        raise SystemExit("the base model looped on no training page: no pairs to train on")
    size = replace(size, batch=min(size.batch, pairs))  # train-dpo refuses less than a batch
    training: dict[str, Any] = {}
    for seed in seeds:
        for arm in size.trained_arms:
            label = f"{arm}-s{seed}"
            training[label] = stages.run(f"train {label}", train, work, label, size, seed,
                                         arm == "sft")  # fmt: skip
            if arm in size.served_arms:
                arms[label] = stages.run(f"serve + eval {label}", serve_and_evaluate, work,
                                         label, ports[label])  # fmt: skip
    return {
        "size": asdict(size),
        "seeds": list(seeds),
        "data": hashes,
        "model": {**card, "beside_weights": beside(weights)},
        "train_job": job,
        "pairs": pairs,
        "pairs_by_loop_kind": pairs_by_kind(work),
        "export": exported.strip().splitlines()[-12:],
        "training": training,
        "arms": arms,
        "summary": report.summarize(arms, seeds),
        "timings_s": {**stages.seconds, "total": round(time.monotonic() - stages.began, 1)},
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench flywheel", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="a few pages, 1 seed, 2 steps")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="training seeds")
    parser.add_argument("--out", type=Path, default=Path("/tmp/folio-flywheel"),
                        help="work folder (pages, models, database, logs)")  # fmt: skip
    parser.add_argument("--weights", type=Path, default=COMMITTED, help="the taught weights")
    parser.add_argument("--steps", type=int, default=None, help="training steps per arm")
    parser.add_argument("--sft-weight", type=float, default=None, help="the DPO arm's SFT term")
    parser.add_argument("--beta", type=float, default=None, help="the DPO arm's beta")
    parser.add_argument("--loop-kinds", nargs="+", default=None,
                        help="train on these loop kinds' pairs only (e.g. char_run)")  # fmt: skip
    parser.add_argument("--base-url", default=None,
                        help="the weights already served at this URL as the base (no server "
                        "of its own)")  # fmt: skip
    args = parser.parse_args(argv)
    size = SMOKE if args.smoke else FULL
    overrides = {"steps": args.steps, "sft_weight": args.sft_weight, "beta": args.beta,
                 "loop_kinds": tuple(args.loop_kinds) if args.loop_kinds else None}  # fmt: skip
    size = Size(**{**asdict(size), **{k: v for k, v in overrides.items() if v is not None}})
    seeds = args.seeds or ([0] if args.smoke else [0, 1, 2])
    result = run(size, seeds, args.out, args.weights, args.base_url)
    result["weights_committed"] = args.weights.resolve() == COMMITTED.resolve()
    from tests.vllm_cpu.server import default_venv

    result["machine"] = machine_info(default_venv(), ("torch", "transformers", "trl", "peft"))
    print(f"Machine: {describe(result['machine'])}")
    print(report.markdown(result["summary"]))
    # Only a full run of the committed weights is the bench's result; others stay in --out.
    official = result["weights_committed"] and not args.smoke
    where = write_results("flywheel", result, None if official else args.out)
    print(f"Results written to {where}")
    return result
