"""`python -m bench flywheel-arms`: is tuning worth it, against what a user can do without it?

The committed taught model (`--weights`) reads held-out pages of several families
(`families.py`) on the vLLM CPU server, through Folio's own commands, in arms side by side on
the same pages and seeds: greedy; greedy then Folio's default retry ladder (the `vlm` plan's
model rungs: temperatures 0.1, 0.2, 0.5); greedy with a repetition penalty; greedy with the
plugin's decode-time n-gram guard (DeepSeek-OCR's 30 in 90). The base's loops on training
pages become pairs (`folio export-dpo --truth`); `folio train-dpo` trains a DPO arm on the
first N of them for each `--pairs` N, and an SFT-only arm on the most; each is served and read
greedily (the largest DPO arm with the ladder too). Per arm (`arms_report.py`): first-attempt
loop rate by the detector's loop kind with a 95% Wilson interval over pages, the loops it fixed
and made against the base on the same pages (McNemar's exact p), CER on all pages and on the
pages where the base never looped, tokens generated per page, training cost.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.environment import describe, machine_info, write_compressed, write_results
from bench.flywheel import arms_report, data, families, pages
from bench.flywheel.model import COMMITTED, assemble
from bench.flywheel.reads import (
    NGRAM,
    guard_rows,
    must_read,
    restricted,
    subset,
    tuned_stems,
)
from bench.flywheel.rows import greedy_of, per_page
from bench.flywheel.run import (
    Stages,
    beside,
    folio,
    fresh_folder,
    last_job,
    pairs_by_kind,
)

PAGE_SEED = 4242
REPETITION_PENALTY = 1.05  # Qwen2-VL's and Qwen2.5-VL's generation_config.json
LADDER = (0.1, 0.2, 0.5)  # the default `vlm` plan's model rungs (olmOCR's ladder 0, 2, 4)
BASE_ARMS = ("ladder", "reppen", "ngram")  # greedy is the ladder's first attempt (`greedy_of`)
# The vLLM CPU server's cost a generated token falls as more sequences share a decode step
# (its per-step work: scheduling, the engine-worker handshake, the Python of six layers), down
# to the attention kernel's per-sequence cost: measured server CPU a page 0.36 s at 32 in
# flight, 0.21 s at 96, 0.17 s at 256 (`python -m bench flywheel-speed`, docs/training.md).
# vLLM's CPU server admits 128 sequences by default: `--max-num-seqs` lets all of them in.
CONCURRENCY = 256
STARTUP_S = 900.0
# KV blocks of 32 tokens (vLLM's CPU default is 128): a page read again (the next arm, a ladder
# rung) then finds its whole image in the prefix cache, and the server skips the vision encoder
# and the prefill; 16 tokens a streamed chunk (1.15x less CPU and 1.22x less wall a page-arm at
# 32 in flight). 256 sequences a step, and a prefill budget that takes a step's new pages'
# prompts (about 250 tokens each) beside the running ones.
SERVER_ARGS = ("--block-size", "32", "--stream-interval", "16",
               "--max-num-seqs", str(CONCURRENCY), "--max-num-batched-tokens", "8192")  # fmt: skip


@dataclass(frozen=True)
class Size:
    train_pages: int
    eval_pages: int
    pairs: tuple[int, ...]  # DPO arms on the first N pairs; SFT-only on the largest
    # the training pages' families (a batch's loops come mostly from a few layouts; drawing
    # its pages from them gets the pairs from fewer generated pages); () all
    train_families: tuple[str, ...] = ()
    eval_families: tuple[str, ...] = ()  # the held-out pages' families in turn; () all
    epochs: float = 2.0
    min_steps: int = 8
    batch: int = 4
    learning_rate: float = 1e-4
    seed: int = 0
    serve_sft: bool = True  # the SFT-only arm served and read (the smoke trains it only)
    max_tokens: int = pages.MAX_TOKENS  # per attempt
    # further training seeds of the largest DPO arm (read with the ladder) and the SFT-only arm,
    # on the same pairs: `dpo-NsS`, `sft-NsS` (the run's `seed` trains `dpo-N` and `sft-N`)
    seeds: tuple[int, ...] = ()
    # the tuned arms read the first N held-out pages (all families in turn; 0: every page),
    # the base's arms all of them: the base's loops by kind need many more pages than a tuned
    # arm's comparison with the base on the same pages
    tuned_pages: int = 0
    # base arms read on the tuned arms' pages only (a remedy compared where the tuned arms are)
    base_subset_arms: tuple[str, ...] = ()


# The committed run (bench/results/flywheel_arms.json): 252 held-out pages, 18 per family and
# 36 of the three families where the probe (`probe.py`) saw the base loop other than by fill
# (`wide`, `columns`) or most (`form_wide`); the training pages from the families it looped on,
# wide forms first, for about 40 pairs.
LOOPING = ("form_wide", "wide", "columns")
FULL = Size(train_pages=160, eval_pages=252, pairs=(5, 20, 50), epochs=1.0,
            train_families=("form_wide", "form_wide", "form_wide", "contents", "wide", "columns"),
            eval_families=(*families.FAMILIES, *LOOPING))  # fmt: skip
# The smoke run checks the mechanics: the SFT arm is trained, not served (its serving is the
# DPO arm's code path: one vLLM start fewer).
# Its random weights loop within a few dozen tokens but a retry runs on to the cap: 256 keeps
# the loops and spares most of the tokens.
SMOKE = Size(train_pages=8, eval_pages=4, pairs=(1,), min_steps=1, epochs=1.0, batch=1,
             serve_sft=False, max_tokens=256)  # fmt: skip


def plans(endpoint: str, seed: int) -> dict[str, list[dict[str, Any]]]:
    greedy = {"name": "greedy", "engine": "vlm", "endpoint": endpoint, "temperature": 0.0}
    rungs = [{**greedy, "name": f"t{t}", "temperature": t, "seed": seed + n}
             for n, t in enumerate(LADDER)]  # fmt: skip
    return {
        "greedy": [greedy],
        "ladder": [greedy, *rungs],
        "reppen": [{**greedy, "name": "reppen", "repetition_penalty": REPETITION_PENALTY}],
        "ngram": [{**greedy, "name": "ngram", "ngram_guard": NGRAM[0], "ngram_window": NGRAM[1]}],
    }


def make_pages(work: Path, size: Size) -> dict[str, Any]:
    prepared = data.prepare(work / "data")
    text = json.loads((work / "data" / "text.json").read_text())
    atlas = np.load(work / "data" / "atlas.npy")
    rng = random.Random(PAGE_SEED)
    listed = {}
    for split, count in (("train", size.train_pages), ("held_out", size.eval_pages)):
        kinds = size.train_families if split == "train" else size.eval_families
        chosen = families.choose(text[split], count, split, rng, kinds or tuple(families.FAMILIES))
        listed[split] = pages.write_pages(
            chosen, atlas, work / "pages" / split, work / "truth" / split
        )
    return {"text_sha256": prepared["text"]["sha256"],  # type: ignore[index]
            "atlas_sha256": prepared["atlas_sha256"], "page_list_sha256": listed,
            "page_seed": PAGE_SEED, "families": list(families.FAMILIES)}  # fmt: skip


def served_name(label: str) -> str:
    """The name each model is served under: an arm's attempts name the model that made them."""
    from tests.vllm_cpu.server import SERVED_MODEL_NAME

    return SERVED_MODEL_NAME if label == "base" else f"{SERVED_MODEL_NAME}-{label}"


def write_settings(work: Path, labels: Sequence[str], size: Size, base_url: str | None) -> None:
    """folio.toml with an endpoint per label on a free port; `base_url`: the base already
    served there (by the caller)."""
    from tests.vllm_cpu.server import free_port

    endpoints = {label: f"http://127.0.0.1:{free_port()}/v1" for label in labels}
    endpoints["base"] = base_url or endpoints["base"]
    models = {label: served_name(label) for label in labels}
    config = pages.settings(f"sqlite:///{work / 'folio.db'}", endpoints, models)
    config["plans"] |= plans(labels[0], size.seed)  # beside the `flywheel` plan `folio run` uses
    config["profiles"][pages.PROFILE_ID]["request"]["max_tokens"] = size.max_tokens
    in_flight(config, CONCURRENCY)
    (work / "folio.toml").write_text(pages.toml_text(config))
    (work / "ports.json").write_text(json.dumps(endpoints))


def in_flight(config: dict[str, Any], pages_at_once: int) -> None:
    """`pages_at_once` pages in flight, and as many requests let through to each endpoint
    (an endpoint's `max_concurrency` is 64 unless set: it, not `vlm_concurrency`, bounds the
    server's batch)."""
    config["vlm_concurrency"] = pages_at_once
    for endpoint in config["vlm_endpoints"].values():
        endpoint["max_concurrency"] = pages_at_once


def port_of(work: Path, label: str) -> int:
    url = json.loads((work / "ports.json").read_text())[label]
    return int(url.rsplit(":", 1)[1].split("/")[0])


def evaluate(work: Path, label: str, arms: Sequence[str], source: str = "pages/held_out",
             out_name: str | None = None) -> dict[str, Any]:  # fmt: skip
    """`folio eval` of the held-out pages (or `source`, a subset of them): one job per plan of
    `arms` on endpoint `label`; each arm's figures and per-page rows (from the attempt rows in
    the database)."""
    out = work / "eval" / (out_name or label)
    specs = [x for plan in arms for x in ("--arm", f"{label}.{plan}={plan}@{label}")]
    folio(work, "eval", source, *specs, "--truth", "truth/held_out", "--out", str(out))
    evaluation = json.loads((out / "eval.json").read_text())
    arms_ = {arm["label"]: per_page(work / "folio.db", arm) for arm in evaluation["arms"]}
    return greedy_of(arms_)


def guard_arm(work: Path, greedy: dict[str, Any], check_share: float = 0.05,
              check_max: int = 150) -> dict[str, Any]:  # fmt: skip
    """The base's n-gram guard arm, read only where the guard could act (`guard_could_act`)
    and taken from the greedy answer elsewhere, with a seeded sample of those pages read all
    the same: `check` says how many of them came back as the greedy answer."""
    rows = greedy["pages"]
    could = sorted(n for n, row in rows.items() if must_read(row))
    skipped = sorted(set(rows) - set(could))
    checked = random.Random(PAGE_SEED).sample(
        skipped, min(check_max, round(check_share * len(skipped)))
    )
    read = evaluate(work, "base", ("ngram",), subset(work, "held_out_ngram", could + checked),
                    "base-ngram")["base.ngram"]  # fmt: skip
    return {"base.ngram": guard_rows(greedy, read)}


def subsets(work: Path, counts: Sequence[int], seed: int) -> dict[int, str]:
    """`pairs-N/` with the first N pairs of one seeded order (nested: 5 within 20 within 50)."""
    rows = (work / "pairs" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    random.Random(seed).shuffle(rows)
    folders = {}
    for count in sorted({min(c, len(rows)) for c in counts}):
        folder = work / f"pairs-{count}"
        folder.mkdir(exist_ok=True)
        (folder / "train.jsonl").write_text("".join(f"{r}\n" for r in rows[:count]))
        if not (folder / "images").exists():
            (folder / "images").symlink_to(work / "pairs" / "images")
        folders[count] = folder.name
    return folders


def _pages(work: Path, size: Size, resume: bool) -> dict[str, Any]:
    """The run's pages: the stopped run's when resuming (refused for another size)."""
    record = work / "pages.json"
    if resume and record.is_file():
        kept = json.loads(record.read_text())
        if kept["size"] != json.loads(json.dumps(asdict(size))):  # tuples as JSON lists
            raise SystemExit(f"{work} holds a run of another size: resume it with its options")
        return dict(kept["hashes"])
    fresh_folder(work)
    hashes = make_pages(work, size)
    record.write_text(json.dumps({"size": asdict(size), "hashes": hashes}, indent=1))
    return hashes


def train(work: Path, folder: str, label: str, size: Size, pairs: int, sft_only: bool
          ) -> dict[str, Any]:  # fmt: skip
    """`folio train-dpo` of one arm; a model a stopped run finished is kept as it is."""
    card_file = work / "models" / label / "training_card.json"
    if card_file.is_file():
        card = json.loads(card_file.read_text())
        return {"pairs": pairs, "steps": card["steps"], "batch": min(size.batch, pairs),
                "train_seconds": card["train_seconds"],
                "pairs_by_loop_kind": card["pairs"].get("by_loop_kind")}  # fmt: skip
    batch = min(size.batch, pairs)
    steps = max(size.min_steps, math.ceil(size.epochs * pairs / batch))
    weights = ["--dpo-weight", "0", "--sft-weight", "1"] if sft_only else [
        "--beta", "0.1", "--sft-weight", "0"]  # fmt: skip
    folio(work, "train-dpo", folder, "--base-model", "models/base", "--out", f"models/{label}",
          "--method", "full", "--learning-rate", str(size.learning_rate),
          "--max-steps", str(steps), "--batch-size", str(batch), "--held-out", "0",
          "--seed", str(size.seed), "--device", "cpu", "--max-length", "1024", "--force",
          "--no-gate",
          *weights)  # fmt: skip
    card = json.loads((work / "models" / label / "training_card.json").read_text())
    return {"pairs": pairs, "steps": card["steps"], "batch": batch,
            "train_seconds": card["train_seconds"],
            "pairs_by_loop_kind": card["pairs"].get("by_loop_kind")}  # fmt: skip


def serve(model_dir: Path, label: str, port: int, log: Path,
          server_args: Sequence[str] = SERVER_ARGS) -> Any:  # fmt: skip
    """`model_dir` on a vLLM CPU server as `served_name(label)`, allowed a long start: at load
    average 40 on 2 cores a start took over 240 s (the test servers' limit); stopped by the
    caller."""
    from tests.vllm_cpu.server import VllmServer

    return VllmServer(model_dir, port=port, log_path=log, startup_timeout=STARTUP_S,
                      extra_args=["--served-model-name", served_name(label),
                                  *server_args]).start()  # fmt: skip


def serve_and_evaluate(work: Path, label: str, arms: Sequence[str],
                       source: str = "pages/held_out") -> dict[str, Any]:  # fmt: skip
    """The arms of the model `label` on its own server; each arm's tokens as that server
    counted them beside Folio's count (they come from this model, not another)."""
    server = serve(work / "models" / label, label, port_of(work, label), work / f"vllm-{label}.log")
    try:
        before = server.generation_tokens_total()
        evaluated = evaluate(work, label, arms, source)
        generated = server.generation_tokens_total() - before
    finally:
        server.stop()
    for arm in evaluated.values():
        arm["server_tokens_all_arms"] = int(generated)
    return evaluated


def run(size: Size, work: Path, weights: Path, base_only: bool,
        base_arms: Sequence[str] = BASE_ARMS, base_url: str | None = None,
        resume: bool = False) -> dict[str, Any]:  # fmt: skip
    """`resume`: go on in the work folder of a stopped run of the same size: its pages and
    trained models are kept, and `folio run` and `folio eval` read only the pages each job has
    not finished."""
    stages = Stages()
    hashes = stages.run("pages", _pages, work, size, resume)
    card = stages.run("assemble", assemble, weights, work / "models" / "base")
    write_settings(work, ["base"], size, base_url)
    server = None if base_url else stages.run(
        "serve base", serve, work / "models" / "base", "base", port_of(work, "base"),
        work / "vllm-base.log")  # fmt: skip
    try:
        stems = tuned_stems(work, size.tuned_pages)
        source = subset(work, "held_out_tuned", stems) if size.tuned_pages else "pages/held_out"
        on_subset = [a for a in base_arms if a in size.base_subset_arms]
        guarded = "ngram" in base_arms and "ladder" in base_arms and "ngram" not in on_subset
        plain = [a for a in base_arms if a not in on_subset and (a != "ngram" or not guarded)]
        arms = stages.run("eval base arms", evaluate, work, "base", plain)
        if on_subset:
            arms |= stages.run("eval base arms (tuned pages)", evaluate, work, "base", on_subset,
                               source, "base-tuned")  # fmt: skip
        if guarded:
            arms |= stages.run("eval base n-gram guard", guard_arm, work, arms["base.greedy"])
        if size.tuned_pages:
            arms |= restricted(arms, stems, size.tuned_pages)
        # a resumed run keeps its pairs: its training pages' job is done, and a second
        # `folio run` would make a new job (read by whatever serves the base now)
        exported = resume and _lines(work / "pairs" / "train.jsonl") > 0
        if not base_only and not exported:
            stages.run("folio run (train pages)", folio, work, "run", "pages/train", "--out",
                       "run-train", ok=(0, 3))  # fmt: skip
            job = last_job(work / "folio.db")
    finally:
        if server is not None:
            server.stop()
    result: dict[str, Any] = {"size": asdict(size), "data": hashes,
                              "model": {**card, "beside_weights": beside(weights)}}  # fmt: skip
    training: dict[str, Any] = {}

    def checkpoint() -> None:
        """The figures so far, after every arm: a run cut short still leaves its arms."""
        result.update(training=training, arms=arms)
        result["summary"] = arms_report.summarize(arms, training)
        result["timings_s"] = {**stages.seconds, "total": round(stages.elapsed(), 1)}
        (work / "partial.json").write_text(json.dumps(result, indent=1))

    checkpoint()
    if not base_only:
        if not exported:
            stages.run("folio export-dpo --truth", folio, work, "export-dpo", job, "--out",
                       "pairs", "--truth", "truth/train")  # fmt: skip
        folders = subsets(work, size.pairs, size.seed)
        if not folders or max(folders) == 0:
            raise SystemExit("the base looped on no training page: no pairs to train on")
        top = max(folders)
        result["pairs_available"] = top
        result["pairs_by_loop_kind"] = pairs_by_kind(work)
        seeded = [f"{kind}-{top}s{seed}" for seed in size.seeds for kind in ("dpo", "sft")]
        labels = ["base", *(f"dpo-{n}" for n in folders), f"sft-{top}", *seeded]
        write_settings(work, labels, size, base_url)
        # the largest arm first, with the ladder and the SFT-only arm beside it: the main
        # comparison; then the smaller DPO arms (how many pairs it takes)
        for count in sorted(folders, reverse=True):
            label = f"dpo-{count}"
            training[label] = stages.run(f"train {label}", train, work, folders[count], label,
                                         size, count, False)  # fmt: skip
            plans_here = ("ladder",) if count == top else ("greedy",)
            arms |= stages.run(f"serve + eval {label}", serve_and_evaluate, work, label,
                               plans_here, source)  # fmt: skip
            checkpoint()
            if count == top:
                label = f"sft-{top}"
                training[label] = stages.run(f"train {label}", train, work, folders[top], label,
                                             size, top, True)  # fmt: skip
                if size.serve_sft:
                    arms |= stages.run(f"serve + eval {label}", serve_and_evaluate, work, label,
                                       ("greedy",), source)  # fmt: skip
                checkpoint()
                for seed in size.seeds:
                    arms |= _seeded(stages, work, folders[top], top, replace(size, seed=seed),
                                    training, source)  # fmt: skip
                    checkpoint()
    checkpoint()
    return result


def finish(work: Path, size: Size) -> dict[str, Any]:
    """The results of a stopped run: the training record of `partial.json`, and every arm it
    finished read again from its `folio eval` folder and attempt rows (the guard arm and the
    `base@N` rows derived again)."""
    _pages(work, size, resume=True)  # refuses another size
    result: dict[str, Any] = json.loads((work / "partial.json").read_text())
    read: dict[str, Any] = {}
    for evaluation in sorted((work / "eval").glob("*/eval.json")):
        for arm in json.loads(evaluation.read_text())["arms"]:
            read[arm["label"]] = per_page(work / "folio.db", arm)
    read = greedy_of(read)
    base = {k: v for k, v in read.items() if k.startswith("base.")}
    if "base.ngram" in base and "base.greedy" in base:
        base["base.ngram"] = guard_rows(base["base.greedy"], base["base.ngram"])
    if size.tuned_pages:
        base |= restricted(base, tuned_stems(work, size.tuned_pages), size.tuned_pages)
    # the server's own token count of a tuned arm is in partial.json only
    tuned = {k: {**result["arms"].get(k, {}), **v} for k, v in read.items()
             if not k.startswith("base.")}  # fmt: skip
    arms = base | tuned
    result.update(arms=arms, finished_from="partial.json's training, each arm's attempt rows")
    result["summary"] = arms_report.summarize(arms, result["training"])
    return result


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else 0


def _seeded(stages: Stages, work: Path, folder: str, top: int, size: Size,
            training: dict[str, Any], source: str) -> dict[str, Any]:  # fmt: skip
    """The largest DPO arm (with the ladder) and the SFT-only arm trained with `size.seed`."""
    read: dict[str, Any] = {}
    for kind, sft_only, plans_here in (("dpo", False, ("ladder",)), ("sft", True, ("greedy",))):
        label = f"{kind}-{top}s{size.seed}"
        training[label] = stages.run(f"train {label}", train, work, folder, label, size, top,
                                     sft_only)  # fmt: skip
        if kind == "dpo" or size.serve_sft:
            read |= stages.run(f"serve + eval {label}", serve_and_evaluate, work, label,
                               plans_here, source)  # fmt: skip
    return read


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench flywheel-arms", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="a few pages, one tiny arm")
    parser.add_argument("--out", type=Path, default=Path("/tmp/folio-flywheel-arms"),
                        help="work folder (pages, models, database, logs)")  # fmt: skip
    parser.add_argument("--weights", type=Path, default=COMMITTED, help="the taught weights")
    parser.add_argument("--train-pages", type=int, default=None)
    parser.add_argument("--eval-pages", type=int, default=None)
    parser.add_argument("--pairs", type=int, nargs="+", default=None, help="DPO arms' pairs")
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help="more training seeds: the largest DPO and SFT-only arms")  # fmt: skip
    parser.add_argument(
        "--train-families",
        nargs="+",
        choices=list(families.FAMILIES),
        default=None,
        help="the training pages' families (default all)",
    )
    parser.add_argument(
        "--tuned-pages",
        type=int,
        default=None,
        help="the tuned arms read the first N held-out pages (default all)",
    )
    parser.add_argument("--base-subset-arms", nargs="+", choices=BASE_ARMS, default=None,
                        help="base arms read on the --tuned-pages pages only")  # fmt: skip
    parser.add_argument("--finish", action="store_true",
                        help="write the results of a stopped run in --out (same options) from "
                        "the arms it finished (its partial.json), reading nothing")  # fmt: skip
    parser.add_argument("--base-only", action="store_true",
                        help="the base's arms only (the families probe): no training")  # fmt: skip
    parser.add_argument("--base-arms", nargs="+", choices=BASE_ARMS, default=list(BASE_ARMS),
                        help="the base's arms (greedy alone for a probe)")  # fmt: skip
    parser.add_argument("--base-url", default=None,
                        help="the weights already served at this URL as the base (no server "
                        "of its own)")  # fmt: skip
    parser.add_argument("--resume", action="store_true",
                        help="go on with a stopped run in --out (same options): finished "
                        "page-arms and trained models are kept")  # fmt: skip
    parser.add_argument("--name", default="flywheel_arms",
                        help="results file NAME.json; another name than the default keeps the "
                        "per-page rows apart, in NAME_pages.json.gz")  # fmt: skip
    args = parser.parse_args(argv)
    size = SMOKE if args.smoke else FULL
    overrides = {
        "train_pages": args.train_pages,
        "eval_pages": args.eval_pages,
        "pairs": tuple(args.pairs) if args.pairs else None,
        "seeds": tuple(args.seeds) if args.seeds else None,
        "train_families": tuple(args.train_families) if args.train_families else None,
        "tuned_pages": args.tuned_pages,
        "base_subset_arms": tuple(args.base_subset_arms) if args.base_subset_arms else None,
    }
    size = Size(**{**asdict(size), **{k: v for k, v in overrides.items() if v is not None}})
    if args.finish:
        result = finish(args.out, size)
    else:
        result = run(size, args.out, args.weights, args.base_only, args.base_arms,
                     args.base_url, args.resume)  # fmt: skip
    result["weights_committed"] = args.weights.resolve() == COMMITTED.resolve()
    from tests.vllm_cpu.server import default_venv

    result["machine"] = machine_info(default_venv(), ("torch", "transformers", "trl", "peft"))
    print(f"Machine: {describe(result['machine'])}")
    print(arms_report.markdown(result["summary"]))
    official = result["weights_committed"] and not args.smoke and not args.base_only
    folder = None if official else args.out
    if args.name != "flywheel_arms":  # a large run's rows: megabytes as indented JSON
        pages_file = write_compressed(f"{args.name}_pages", {"arms": result.pop("arms")}, folder)
        result["pages_file"] = pages_file.name
    where = write_results(args.name, result, folder)
    print(f"Results written to {where}")
    return result
