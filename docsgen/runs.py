"""Committed benchmark runs read back as the report reads a job: the degeneration-tax
validation keeps every attempt of every arm it ran (`bench/results/*_runs.json.gz`), on the
real vLLM CPU server, so the report and the pictures can be computed from them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from app.report.compute import JobReport, compute_report
from app.report.pricing import EndpointPrice, Pricing
from app.report.rows import AttemptRow, DocumentRow, JobRows, PageRow
from bench.environment import read_results
from bench.tax.reestimate import arm_runs
from bench.tax.run import ArmRun, PageRun
from bench.tax.summary import attempt_row
from bench.tax.workload import ENDPOINT

RESULTS = "tax_validation"
RUN = "q1"
REGIME = "engine reniced"
# An illustrative GPU price, so that the report can split a cost (the runs are on a CPU).
GPU_USD_PER_HOUR = 2.0
PRICING = Pricing(endpoints={ENDPOINT: EndpointPrice(usd_per_gpu_hour=GPU_USD_PER_HOUR)})


@dataclass(frozen=True)
class Batch:
    """One arm's batch as it ran: its label, the run it came from and its rows."""

    arm: str
    source: str
    rows: JobRows

    def report(self) -> JobReport:
        return compute_report(self.rows, PRICING)


def committed_batches(arms: tuple[str, ...]) -> dict[str, Batch]:
    """The first batch of each arm in run `RUN`, regime `REGIME`, of the committed validation."""
    kept = read_results(f"{RESULTS}_runs")
    if kept is None:
        raise FileNotFoundError(f"bench/results/{RESULTS}_runs.json.gz is missing")
    run = next(r for r in kept["runs"] if r["run"] == RUN)
    found: dict[str, Batch] = {}
    for arm_run in arm_runs(run["regimes"][REGIME]):
        if arm_run.arm in arms and arm_run.arm not in found:
            source = f"bench/results/{RESULTS}_runs.json.gz: run {RUN}, {REGIME}"
            found[arm_run.arm] = Batch(arm_run.arm, source, job_rows(arm_run))
    return found


def job_rows(run: ArmRun) -> JobRows:
    attempts = [
        _attempt_row(len_before + i + 1, page, attempt)
        for len_before, page in _numbered(run.pages)
        for i, attempt in enumerate(page.attempts)
    ]
    pages = [_page_row(page) for page in run.pages]
    return JobRows(
        job_id=f"bench-{run.arm}",
        plan="vlm",
        status="done",
        started_at=min(a.started_at for a in attempts),
        finished_at=max(a.ended_at for a in attempts),
        documents=[DocumentRow(f"page-{p.number}", "done") for p in pages],
        pages=pages,
        attempts=attempts,
    )


def _numbered(pages: list[PageRun]) -> list[tuple[int, PageRun]]:
    numbered, count = [], 0
    for page in pages:
        numbered.append((count, page))
        count += len(page.attempts)
    return numbered


def _attempt_row(row_id: int, page: PageRun, attempt: Any) -> AttemptRow:
    return replace(attempt_row(row_id, page, attempt), stop_mechanism=attempt.stop)


def _page_row(page: PageRun) -> PageRow:
    ok = page.final_status.value == "ok"
    status = ("succeeded" if len(page.attempts) == 1 else "fallback") if ok else "failed"
    final = page.attempts[-1].step if ok else None
    return PageRow(page.page.index, f"page-{page.page.index}", 1, status, final)


def _clock(monotonic: float) -> datetime:
    return datetime.fromtimestamp(monotonic, UTC)
