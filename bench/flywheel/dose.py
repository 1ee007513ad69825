"""`python -m bench flywheel-dose`: does tuning on a batch's own loops work at a real dose?

The seed's recipe (SFT, then DPO on hundreds of the model's own degenerate-rejected pairs) at
the doses a batch gives, against the same held-out pages as `flywheel-arms` (the first N of
`flywheel_arms_6000`'s held-out pages, checked by the page list's hash):

1. **A training pool**: pages of the families the base loops on (`POOL_FAMILIES`, from the
   base's rates by family on 6,000 held-out pages), read by the base with Folio's retry ladder,
   so a looping page's chosen side can be its truth (`pairs/truth`) or the model's own healthy
   retry where one came back (`pairs/own`). Every `VALIDATION_EVERY`-th pool page is a
   validation page: its pairs are never trained on, and the validation pages' reading by each
   candidate model is what any hyperparameter is chosen on. The held-out pages choose nothing.
2. **A dose curve** (`--curve`, plain DPO by default, at each `--doses`, every `--seeds`) and
   **recipes** at the top dose (`RECIPES`), each a tuned model trained by `folio train-dpo`,
   served, and read greedily on the validation pages and the held-out pages.
3. **Per run** (`onset.py`): reward margin and accuracy on the validation pairs, and how the
   log-probability of the loop's continuation at its onset moved against the base.

Every stage is kept in the work folder: `--resume` goes on where a stopped run ended (a trained
model with its card is not trained again; `folio eval` reads only unfinished pages).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench.environment import describe, machine_info, write_compressed, write_results
from bench.flywheel import arms, dose_report, onset, pages, pool, pool_pack
from bench.flywheel.dose_sweep import candidate, sweep_label, validation_figures
from bench.flywheel.model import COMMITTED, assemble
from bench.flywheel.rows import greedy_of, per_page
from bench.flywheel.run import Stages, folio, fresh_folder

# vLLM 0.32's CPU worker crashes ("CPU Generator does not use offset") when a seeded request
# (a ladder rung) is prefilled in chunks, and a burst of retries at 256 in flight does it: the
# pool's first read lost 3,094 pages to it. Without chunked prefill a prompt waits for a step
# with room for all of it (a GPU's CUDA generator has the offset, so GPUs never take this path).
SERVER_ARGS = (*arms.SERVER_ARGS, "--no-enable-chunked-prefill")
RECIPES = {
    "dpo": "DPO, the page's truth chosen",
    "own": "DPO, the model's own healthy retry chosen",
    "dposft": "DPO plus an SFT term (weight 1) on the chosen side, truth chosen",
    "two": "SFT on healthy pool pages' truth, then DPO (truth chosen) on pairs read from the base",
    "sft": "SFT only, on the truth pairs' chosen side",
}
CURVES = ("dpo", "dposft", "sft")  # truth chosen: one nested order of pairs at every dose


@dataclass(frozen=True)
class Study:
    pool_pages: int = 2800
    eval_pages: int = 1200  # the first N of the reference run's held-out pages
    doses: tuple[int, ...] = (36, 100, 300)
    seeds: tuple[int, ...] = (0, 1, 2)
    recipes: tuple[str, ...] = ("two", "own", "dposft", "sft")  # at the top dose
    curve: str = "dpo"  # the recipe trained at every dose (`CURVES`)
    epochs: float = 2.0
    min_steps: int = 8
    batch: int = 4
    learning_rate: float = 1e-4
    beta: float = 0.1
    max_tokens: int = pages.MAX_TOKENS
    # hyperparameter candidates "LEARNING_RATE:BETA:EPOCHS", tried at `sweep_dose` pairs and
    # chosen on the validation pages (`sweep`); () keeps the values above
    sweep: tuple[str, ...] = ("1e-4:0.1:2", "3e-4:0.1:2", "3e-5:0.1:2")
    sweep_dose: int = 100
    arm_validation: bool = True  # each arm read on the validation pages too, not only held-out
    train_ahead: bool = True  # the next arm trains while this one is read (its card is kept)


# what the pages (pool and held-out) depend on: a resumed study keeps them, and may change the
# rest (doses, seeds, recipes, the sweep: arms already read are kept under their labels)
PAGE_OPTIONS = ("pool_pages", "eval_pages", "max_tokens")

SMOKE = Study(
    pool_pages=14,
    eval_pages=4,
    doses=(1,),
    seeds=(0,),
    recipes=("own", "two"),
    epochs=1.0,
    min_steps=1,
    batch=1,
    max_tokens=256,
    sweep=("1e-4:0.1:1",),
    sweep_dose=1,
)


def _pages(work: Path, study: Study, resume: bool) -> dict[str, Any]:
    record = work / "pages.json"
    if resume and record.is_file():
        kept = json.loads(record.read_text())
        pages_of = {k: kept["study"][k] for k in PAGE_OPTIONS}
        if pages_of != {k: getattr(study, k) for k in PAGE_OPTIONS}:
            raise SystemExit(f"{work} holds pages of another size: resume it with {pages_of}")
        if kept["study"] != json.loads(json.dumps(asdict(study))):
            kept["study"] = asdict(study)  # the arms' options may change; the pages may not
            record.write_text(json.dumps(kept, indent=1))
        return dict(kept["hashes"])
    fresh_folder(work)
    hashes = pool.make_pages(work, study.pool_pages, study.eval_pages)
    record.write_text(json.dumps({"study": asdict(study), "hashes": hashes}, indent=1))
    return hashes


@dataclass(frozen=True)
class Arm:
    recipe: str
    pairs: int
    seed: int
    folder: str  # the pairs

    @property
    def label(self) -> str:
        return f"{self.recipe}-{self.pairs}s{self.seed}"


def plan_arms(work: Path, study: Study) -> list[Arm]:
    """The curve's recipe at each dose from the top down, then the other recipes at the top
    dose, each over every seed: a run stopped early has the curve before the recipes."""
    truth = pool.nested(work, "truth", study.doses, 0)
    if not truth:
        raise SystemExit("the base looped on no training page of the pool: no pairs")
    top = max(truth)
    out = [
        Arm(study.curve, n, s, truth[n]) for n in sorted(truth, reverse=True) for s in study.seeds
    ]
    own = pool.nested(work, "own", (top,), 0)
    for recipe in study.recipes:
        if recipe == study.curve or (recipe == "own" and not own):
            continue
        count, folder = (max(own), own[max(own)]) if recipe == "own" else (top, truth[top])
        out += [Arm(recipe, count, s, folder) for s in study.seeds]
    return out


def sweep(
    work: Path,
    study: Study,
    stages: Stages,
    readings: dict[str, Any],
    training: dict[str, Any],
    checkpoint: Any,
) -> dict[str, Any]:
    """Plain DPO at the sweep dose (seed 0) with each candidate (learning rate, beta, epochs),
    read on the validation pages only; the chosen one loops least there, its CER on the pages
    the base read without a loop within CER_TOLERANCE of the base's (`validation_figures`)."""
    if not study.sweep:
        return {"chosen": None, "candidates": {}}
    truth = pool.nested(work, "truth", (study.sweep_dose,), 0)
    count = max(truth)
    candidates = {}
    for spec in study.sweep:
        lr, beta, epochs = candidate(spec)
        label = sweep_label(spec)
        tried = replace(study, learning_rate=lr, beta=beta, epochs=epochs)
        if label not in readings:
            training[label] = stages.run(
                f"train {label}",
                _train,
                work,
                truth[count],
                f"models/{label}",
                "models/base",
                tried,
                0,
                count,
                "dpo",
            )
            readings[label] = stages.run(
                f"serve + read {label}", serve_and_read, work, label, "greedy", ("validation",)
            )
            checkpoint()
        candidates[spec] = validation_figures(readings, label)
    fit = [s for s, c in candidates.items() if c["cer_rise"] <= dose_report.CER_TOLERANCE]
    chosen = min(fit or candidates, key=lambda s: (candidates[s]["rate"], candidates[s]["cer"]))
    return {"chosen": chosen, "dose": count, "candidates": candidates}


def train_arm(work: Path, arm: Arm, study: Study) -> dict[str, Any]:
    """`folio train-dpo` of one arm (the two-stage recipe's SFT model first); a model a stopped
    run finished is kept."""
    base = "models/base"
    if arm.recipe == "two":
        sft = f"models/healthy-sft-s{arm.seed}"
        _train(work, "pairs/healthy", sft, base, study, arm.seed, arm.pairs, "sft")
        base = sft
    mode = {"dpo": "dpo", "own": "dpo", "dposft": "dposft", "two": "dpo", "sft": "sft"}
    return _train(
        work, arm.folder, f"models/{arm.label}", base, study, arm.seed, arm.pairs, mode[arm.recipe]
    )


def _train(
    work: Path, folder: str, out: str, base: str, study: Study, seed: int, pairs: int, mode: str
) -> dict[str, Any]:
    card_file = work / out / "training_card.json"
    if not card_file.is_file():
        batch = min(study.batch, pairs)
        steps = max(study.min_steps, math.ceil(study.epochs * pairs / batch))
        losses = {
            "dpo": ["--beta", str(study.beta), "--sft-weight", "0"],
            "dposft": ["--beta", str(study.beta), "--sft-weight", "1"],
            "sft": ["--dpo-weight", "0", "--sft-weight", "1"],
        }[mode]
        options = {
            "--base-model": base,
            "--out": out,
            "--method": "full",
            "--learning-rate": str(study.learning_rate),
            "--max-steps": str(steps),
            "--batch-size": str(batch),
            "--held-out": "0",
            "--seed": str(seed),
            "--device": "cpu",
            "--max-length": "1024",
        }
        flags = [part for pair in options.items() for part in pair]
        folio(work, "train-dpo", folder, *flags, "--force", "--no-gate", *losses)
    card = json.loads(card_file.read_text())
    return {
        "pairs": pairs,
        "steps": card["steps"],
        "train_seconds": card["train_seconds"],
        "base": base,
        "mode": mode,
        "learning_rate": study.learning_rate,
        "beta": study.beta,
        "epochs": study.epochs,
        "batch": min(study.batch, pairs),
        "pairs_by_loop_kind": card["pairs"].get("by_loop_kind"),
    }


def read(work: Path, label: str, plan: str, source: str, truth: str, out: str) -> dict[str, Any]:
    """`folio eval` of one plan on the model `label` (already served): the arm's per-page rows."""
    spec = f"{label}.{plan}={plan}@{label}"
    folio(work, "eval", source, "--arm", spec, "--truth", truth, "--out", f"eval/{out}")
    (arm,) = json.loads((work / "eval" / out / "eval.json").read_text())["arms"]
    pool.refuse_transport_failures(work, arm["job_id"])
    return per_page(work / "folio.db", arm, truth.split("/", 1)[1])


def read_base(work: Path) -> dict[str, Any]:
    """The base with Folio's ladder (its first attempt is the greedy arm) on both splits, and
    with the n-gram guard on the held-out pages (the remedy without training)."""
    validation = read(
        work, "base", "ladder", "pages/validation", "truth/validation", "base-validation"
    )
    held_out = read(work, "base", "ladder", "pages/held_out", "truth/held_out", "base")
    guard = read(work, "base", "ngram", "pages/held_out", "truth/held_out", "base-ngram")
    return {
        "validation": greedy_of({"base.ladder": validation}),
        "held_out": greedy_of({"base.ladder": held_out}) | {"base.ngram": guard},
    }


def serve_and_read(
    work: Path, label: str, plan: str, splits: Sequence[str] = ("validation", "held_out")
) -> dict[str, Any]:
    """The model on its own server, read on the validation pages and the held-out pages."""
    server = _serve(work, label)
    try:
        out = {split: label if split == "held_out" else f"{label}-{split}" for split in splits}
        rows = {s: read(work, label, plan, f"pages/{s}", f"truth/{s}", out[s]) for s in splits}
    finally:
        server.stop()
    return {split: greedy_of({f"{label}.{plan}": arm}) for split, arm in rows.items()}


def _serve(work: Path, label: str) -> Any:
    log = work / f"vllm-{label}.log"
    return arms.serve(work / "models" / label, label, arms.port_of(work, label), log, SERVER_ARGS)


def run(
    study: Study, work: Path, weights: Path, resume: bool, base_url: str | None, keep: bool
) -> dict[str, Any]:
    """`base_url`: the weights already served there as the base (no server of its own);
    `keep`: the pool's reading kept in bench/results (`pool_pack`), used where it is there."""
    stages = Stages()
    hashes = stages.run("pages", _pages, work, study, resume)
    card = stages.run("assemble", assemble, weights, work / "models" / "base")
    arms.write_settings(work, ["base"], _size(study), base_url)
    if keep:
        stages.run("pool kept", pool_pack.unpack, work, hashes)
    result: dict[str, Any] = {
        "study": asdict(study),
        "data": hashes,
        "model": card,
        "recipes": RECIPES,
    }
    partial = work / "partial.json"
    kept = json.loads(partial.read_text()) if resume and partial.is_file() else {}
    if keep and not kept:
        kept = pool_pack.kept_partial(hashes)
    readings: dict[str, Any] = kept.get("readings", {})
    training: dict[str, Any] = kept.get("training", {})
    diagnostics: dict[str, Any] = kept.get("diagnostics", {})

    def checkpoint() -> None:
        result.update(
            readings=readings,
            training=training,
            diagnostics=diagnostics,
            timings_s={**stages.seconds, "total": round(stages.elapsed(), 1)},
        )
        partial.write_text(json.dumps(result))
        if keep:
            pool_pack.keep_partial(result)

    server = None if base_url else _serve(work, "base")
    try:
        job = stages.run("folio run --plan ladder (pool)", pool.read_pool, work)
        result["pairs"] = stages.run("export pairs", pool.export_pairs, work, job)
        if keep:
            stages.run("keep the pool's reading", pool_pack.pack, work, job, hashes, None)
        if "base" not in readings:
            readings["base"] = stages.run("base: validation and held-out", read_base, work)
            checkpoint()
    finally:
        if server is not None:
            server.stop()
    labels = [sweep_label(spec) for spec in study.sweep]
    planned = plan_arms(work, study)
    arms.write_settings(
        work, ["base", *labels, *(a.label for a in planned)], _size(study), base_url
    )
    result["sweep"] = sweep(work, study, stages, readings, training, checkpoint)
    if result["sweep"]["chosen"]:
        lr, beta, epochs = candidate(result["sweep"]["chosen"])
        study = replace(study, learning_rate=lr, beta=beta, epochs=epochs)
    result["arms_planned"] = [a.label for a in planned]
    train_and_read(work, study, stages, planned, (readings, training, diagnostics), checkpoint)
    checkpoint()
    result["summary"] = dose_report.summarize(readings, training, diagnostics)
    return result


def train_and_read(
    work: Path,
    study: Study,
    stages: Stages,
    planned: Sequence[Arm],
    kept: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
    checkpoint: Any,
) -> None:
    """Each arm not yet read trained, read and diagnosed into `kept` (readings, training,
    diagnostics), with a checkpoint after each step; `study.train_ahead`: the arms train back to
    back from the start while the trained ones are read (the trainer holds one core, and an arm
    trains longer than it reads). An arm's diagnosis runs beside the next arm's reading."""
    readings, training, diagnostics = kept
    splits = ("validation", "held_out") if study.arm_validation else ("held_out",)
    todo = [arm for arm in planned if arm.label not in readings]
    ahead, beside = ThreadPoolExecutor(max_workers=1), ThreadPoolExecutor(max_workers=1)
    diagnosing: dict[str, Future[Any]] = {}

    def diagnose(label: str) -> None:
        run = (f"diagnose {label}", onset.diagnose, work, label, study.beta)
        diagnosing[label] = beside.submit(stages.run, *run)

    def settle(wait: bool) -> None:
        for label, job in list(diagnosing.items()):
            if wait or job.done():
                diagnostics[label] = diagnosing.pop(label).result()
        checkpoint()

    try:
        for arm in planned:
            if arm.label in readings and arm.label not in diagnostics:
                diagnose(arm.label)  # read before a stop, not yet diagnosed
        # ahead: every arm queued at once on the one trainer, which never waits for a reading
        first = todo if study.train_ahead else todo[:1]
        trained = {arm.label: ahead.submit(train_arm, work, arm, study) for arm in first}
        for arm, after in zip(todo, [*todo[1:], None], strict=True):
            training[arm.label] = stages.run(f"train {arm.label}", trained[arm.label].result)
            readings[arm.label] = stages.run(
                f"serve + read {arm.label}", serve_and_read, work, arm.label, "greedy", splits
            )
            diagnose(arm.label)
            settle(wait=False)
            if after is not None and not study.train_ahead:
                trained[after.label] = ahead.submit(train_arm, work, after, study)
        settle(wait=True)
    finally:
        ahead.shutdown(wait=True, cancel_futures=True)  # a stopped study trains no more arms
        beside.shutdown(wait=True, cancel_futures=True)


def _size(study: Study) -> arms.Size:
    return replace(arms.FULL, max_tokens=study.max_tokens, seed=0)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench flywheel-dose", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="a few pages, tiny arms")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("/tmp/folio-flywheel-dose"),
        help="work folder (pages, models, database, logs)",
    )
    parser.add_argument("--weights", type=Path, default=COMMITTED, help="the taught weights")
    parser.add_argument("--pool-pages", type=int, default=None)
    parser.add_argument("--eval-pages", type=int, default=None)
    parser.add_argument("--doses", type=int, nargs="+", default=None, help="DPO arms' pairs")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="training seeds")
    parser.add_argument(
        "--recipes",
        nargs="*",
        choices=list(RECIPES),
        default=None,
        help="recipes at the top dose beside the curve's",
    )
    parser.add_argument("--curve", choices=CURVES, default=None, help="the dose curve's recipe")
    parser.add_argument("--learning-rate", type=float, default=None)
    parser.add_argument("--beta", type=float, default=None)
    parser.add_argument("--epochs", type=float, default=None)
    parser.add_argument(
        "--sweep",
        nargs="*",
        default=None,
        metavar="LR:BETA:EPOCHS",
        help="hyperparameter candidates chosen on the validation pages (none: no sweep)",
    )
    parser.add_argument(
        "--held-out-only",
        action="store_true",
        help="read each arm on the held-out pages only (not the validation pages)",
    )
    parser.add_argument(
        "--train-ahead",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="train the next arm while this one is read (default: on)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with a stopped study in --out (its pages' options; the arms' may change)",
    )
    parser.add_argument(
        "--finish",
        action="store_true",
        help="write the results of a stopped study from its partial.json",
    )
    parser.add_argument(
        "--base-url", default=None, help="the weights already served at this URL as the base"
    )
    parser.add_argument("--name", default="flywheel_dose", help="results file NAME.json")
    args = parser.parse_args(argv)
    study = SMOKE if args.smoke else Study()
    overrides = {
        "pool_pages": args.pool_pages,
        "eval_pages": args.eval_pages,
        "doses": tuple(args.doses) if args.doses else None,
        "seeds": tuple(args.seeds) if args.seeds else None,
        "recipes": tuple(args.recipes) if args.recipes is not None else None,
        "curve": args.curve,
        "learning_rate": args.learning_rate,
        "beta": args.beta,
        "epochs": args.epochs,
        "sweep": tuple(args.sweep) if args.sweep is not None else None,
        "arm_validation": False if args.held_out_only else None,
        "train_ahead": args.train_ahead,
    }
    study = Study(**{**asdict(study), **{k: v for k, v in overrides.items() if v is not None}})
    official = args.weights.resolve() == COMMITTED.resolve() and not args.smoke
    if args.finish:
        _pages(args.out, study, resume=True)
        result = json.loads((args.out / "partial.json").read_text())
        result["summary"] = dose_report.summarize(
            result["readings"], result["training"], result["diagnostics"]
        )
    else:
        result = run(study, args.out, args.weights, args.resume, args.base_url, official)
    from tests.vllm_cpu.server import default_venv

    result["machine"] = machine_info(default_venv(), ("torch", "transformers", "trl", "peft"))
    print(f"Machine: {describe(result['machine'])}")
    print(dose_report.markdown(result["summary"]))
    folder = None if official else args.out
    pages_file = write_compressed(
        f"{args.name}_pages", {"readings": result.pop("readings")}, folder
    )
    result["pages_file"] = pages_file.name
    where = write_results(args.name, result, folder)
    print(f"Results written to {where}")
    shutil.rmtree(args.out / "tmp", ignore_errors=True)
    return result
