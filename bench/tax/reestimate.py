"""`python -m bench tax-reestimate [--results NAME]`: the validation's error table again, with
the report's estimate as the code computes it now, from the attempts a `tax-validate` run kept
(`bench/results/NAME_runs.json.gz`, or `NAME_runs.json` from runs before 2026-11-26; NAME
defaults to tax_validation). Measured figures stay as they were; only the estimate columns
change, so an estimator change is checked against the same runs in seconds instead of another
hour of benchmark. Prints the tables and writes `bench/results/NAME_reestimated.json`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from app.domain import AttemptStatus
from bench.environment import RESULTS_DIR, read_results, write_results
from bench.tax.run import ArmRun, AttemptRun, PageRun
from bench.tax.summary import summarize
from bench.tax.validate import validation_report
from bench.tax.validation_tables import markdown
from bench.tax.workload import PageSpec


def arm_runs(kept: list[dict[str, Any]]) -> list[ArmRun]:
    """ArmRuns back from their JSON form (`dataclasses.asdict`)."""
    return [ArmRun(**{**run, "pages": [_page_run(page) for page in run["pages"]]}) for run in kept]


def _page_run(page: dict[str, Any]) -> PageRun:
    attempts = [AttemptRun(**{**a, "status": AttemptStatus(a["status"])}) for a in page["attempts"]]
    return PageRun(PageSpec(**page["page"]), attempts)


def reestimate(report: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    """`report` (a tax-validate result) with every run's figures computed again from `kept`."""
    by_name = {run["run"]: run["regimes"] for run in kept["runs"]}
    runs = [
        run | {"regimes": {r: summarize(arm_runs(k)) for r, k in by_name[run["run"]].items()}}
        for run in report["runs"]
        if run["run"] in by_name
    ]
    return validation_report(runs) | {"complete": report.get("complete", True)}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench tax-reestimate", description=__doc__)
    parser.add_argument("--results", default="tax_validation", help="NAME (tax_validation)")
    args = parser.parse_args(argv)
    report = read_results(args.results)
    kept = read_results(f"{args.results}_runs")
    if report is None or kept is None:
        missing = f"{args.results}.json" if report is None else f"{args.results}_runs.json.gz"
        raise SystemExit(
            f"{RESULTS_DIR / missing} is missing: run `python -m bench tax-validate` first"
        )
    redone = reestimate(report, kept)
    print(markdown(redone))
    path = write_results(f"{args.results}_reestimated", redone)
    print(f"Written to {path}")
    return redone
