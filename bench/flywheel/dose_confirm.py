"""`python -m bench flywheel-dose-confirm`: a model the dose study trained, on all 6,000 pages.

The dose study (`dose.py`) reads every arm on the first 1,200 of `flywheel_arms_6000`'s held-out
pages; its best recipe is then read on all 6,000. The model (`--model WORK/models/LABEL`, a
folder the study trained and kept) is served and read greedily on the 6,000 pages, made again
here and checked against the committed run's page-list hash, and set beside that run's base,
n-gram guard and ladder on the same pages (`bench/results/flywheel_arms_6000_pages.json.gz`).

The base was read in that earlier run, not beside the model, so two readings of the base are
compared where they can be: the dose study's own base reading of the first 1,200 pages against
the committed one (`base_agreement`: pages whose first attempt both call looping or both call
clean), and the model's reading of those pages here against its reading in the study
(`model_agreement`). Pages in one reading and not the other stay out of both.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.environment import (
    describe,
    machine_info,
    read_results,
    write_compressed,
    write_results,
)
from bench.flywheel import arms, arms_report, dose, pool
from bench.flywheel.run import Stages

REFERENCE = "flywheel_arms_6000"
STUDY_PAGES = "flywheel_dose_pages"
BESIDE = ("base.greedy", "base.ngram", "base.ladder")  # the committed run's arms set beside it


def make_pages(work: Path) -> str:
    """All the reference run's held-out pages (the study's pages with no pool), written once;
    their list's hash is checked."""
    expected = _read(REFERENCE)["data"]["page_list_sha256"]["held_out"]
    record = work / "pages.json"
    if record.is_file() and json.loads(record.read_text()).get("held_out") == expected:
        return str(expected)
    made = pool.make_pages(work, 0, pool.REFERENCE.eval_pages)
    written = made["page_list_sha256"]["held_out"]
    if written != expected:
        raise SystemExit(f"the pages came out otherwise ({written}, committed {expected})")
    record.write_text(json.dumps({"held_out": written}))
    return written


def agreement(one: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """Pages in both readings, and how many get the same first-attempt verdict (loop or not)."""
    shared = sorted(set(one) & set(other))
    same = sum((one[n]["first"] is None) == (other[n]["first"] is None) for n in shared)
    return {"pages": len(shared), "same_verdict": same}


def _read(name: str) -> dict[str, Any]:
    found = read_results(name)
    if found is None:
        raise SystemExit(f"bench/results holds no {name}")
    return found


def committed_arms() -> dict[str, Any]:
    kept = _read(f"{REFERENCE}_pages")["arms"]
    return {label: kept[label] for label in BESIDE if label in kept}


def study_rows(label: str) -> dict[str, Any]:
    """The study's held-out readings of the base and of `label` (first 1,200 pages), if kept."""
    study = read_results(STUDY_PAGES)
    if study is None:
        return {}
    readings = study["readings"]
    out = {"base": readings.get("base", {}).get("held_out", {}).get("base.greedy")}
    out["model"] = readings.get(label, {}).get("held_out", {}).get(f"{label}.greedy")
    return {key: rows["pages"] for key, rows in out.items() if rows}


def run(work: Path, model: Path, label: str) -> dict[str, Any]:
    stages = Stages()
    work.mkdir(parents=True, exist_ok=True)
    page_hash = stages.run("pages", make_pages, work)
    arms.write_settings(work, ["base", label], dose._size(dose.Study()), None)
    log = work / f"vllm-{label}.log"
    server = arms.serve(model, label, arms.port_of(work, label), log, dose.SERVER_ARGS)
    try:
        rows = stages.run(
            f"read {label} (6,000 pages)",
            dose.read,
            work,
            label,
            "greedy",
            "pages/held_out",
            "truth/held_out",
            label,
        )
    finally:
        server.stop()
    beside = committed_arms()
    if set(rows["pages"]) != set(beside["base.greedy"]["pages"]):
        raise SystemExit("the model's pages are not the committed run's")
    card = json.loads((model / "training_card.json").read_text())
    training = {label: {"pairs": card["pairs"]["train"], "steps": card["steps"],
                        "train_seconds": card["train_seconds"]}}  # fmt: skip
    read = {**beside, f"{label}.greedy": rows}
    earlier = study_rows(label)
    return {
        "model": {"label": label, "folder": str(model), "config": card.get("config")},
        "data": {"page_list_sha256": page_hash, "reference": REFERENCE},
        "base_agreement": agreement(earlier["base"], beside["base.greedy"]["pages"])
        if "base" in earlier
        else None,
        "model_agreement": agreement(earlier["model"], rows["pages"])
        if "model" in earlier
        else None,
        "summary": arms_report.summarize(read, training),
        "readings": read,
        "timings_s": {**stages.seconds, "total": round(stages.elapsed(), 1)},
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m bench flywheel-dose-confirm", description=__doc__
    )
    parser.add_argument("--model", type=Path, required=True, help="WORK/models/LABEL")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("/tmp/folio-flywheel-confirm"),
        help="work folder (pages, database, logs); a stopped reading goes on",
    )
    parser.add_argument("--name", default="flywheel_dose_6000", help="results file NAME.json")
    args = parser.parse_args(argv)
    label = args.model.resolve().name
    result = run(args.out, args.model.resolve(), label)
    from tests.vllm_cpu.server import default_venv

    result["machine"] = machine_info(default_venv(), ("torch", "transformers"))
    print(f"Machine: {describe(result['machine'])}")
    print(arms_report.markdown(result["summary"]))
    for name in ("base_agreement", "model_agreement"):
        print(f"{name}: {result[name]}")
    pages_file = write_compressed(f"{args.name}_pages", {"readings": result.pop("readings")})
    result["pages_file"] = pages_file.name
    print(f"Results written to {write_results(args.name, result)}")
    return result
