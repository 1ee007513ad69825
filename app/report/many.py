"""Reports of many jobs at once, for a list of jobs: the rows of all of them in a few queries
(not a few per job), each job's report computed by `compute_report` as for one job.

What a list leaves out: output tails (the degenerate attempts' text) and server samples; the
figures a list shows (pages, degeneration first and final, tokens, cost) need neither. Other
jobs' attempts are read only where an endpoint has a GPU price: only a GPU's busy time is
shared between jobs (`app.report.cost`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.db import attempts, pages
from app.db.dialect import as_utc
from app.db.engine import Database
from app.report.compute import JobReport, compute_report
from app.report.load import ATTEMPT_COLUMNS, attempt_row
from app.report.pricing import Pricing
from app.report.rows import AttemptRow, JobRows, PageRow


@dataclass(frozen=True)
class ListedJob:
    """What a list knows of a job already."""

    id: str
    plan: str
    status: str
    started_at: datetime | None
    finished_at: datetime | None


def job_reports(db: Database, jobs: Sequence[ListedJob], pricing: Pricing) -> dict[str, JobReport]:
    """Each job's report (without output tails or server figures), by job id."""
    ids = [j.id for j in jobs]
    if not ids:
        return {}
    own: dict[str, list[AttemptRow]] = defaultdict(list)
    by_page: dict[str, list[PageRow]] = defaultdict(list)
    with db.session() as session:
        for values in attempts.jobs_attempts(session, ids, ATTEMPT_COLUMNS):
            own[values.pop("job_id")].append(attempt_row(values, {}))
        for job_id, *page in pages.jobs_page_outcomes(session, ids):
            by_page[job_id].append(PageRow(*page))
        shared = _shared(session, pricing, [a for rows in own.values() for a in rows])
    reports = {}
    for job in jobs:
        mine = own.get(job.id, [])
        rows = JobRows(
            job_id=job.id,
            plan=job.plan,
            status=job.status,
            started_at=None if job.started_at is None else as_utc(job.started_at),
            finished_at=None if job.finished_at is None else as_utc(job.finished_at),
            pages=by_page.get(job.id, []),
            attempts=mine,
            neighbours=_beside(job.id, mine, shared),
        )
        reports[job.id] = compute_report(rows, pricing, slowest=0, listed=0)
    return reports


def _shared(
    session: Any, pricing: Pricing, listed: list[AttemptRow]
) -> list[tuple[str, AttemptRow]]:
    """Every attempt on a GPU-priced endpoint while the listed attempts ran, with its job."""
    gpu = {
        a.endpoint
        for a in listed
        if a.endpoint and (price := pricing.for_endpoint(a.endpoint)) and price.usd_per_gpu_hour
    }
    if not gpu:
        return []
    during = (min(a.started_at for a in listed), max(a.ended_at for a in listed))
    found = attempts.attempts_during(session, gpu, during, ATTEMPT_COLUMNS)
    return [(values.pop("job_id"), attempt_row(values, {})) for values in found]


def _beside(
    job_id: str, mine: list[AttemptRow], shared: list[tuple[str, AttemptRow]]
) -> list[AttemptRow]:
    """Other jobs' attempts that overlapped this job's, as `load_job_rows` finds them."""
    if not mine or not shared:
        return []
    start, end = min(a.started_at for a in mine), max(a.ended_at for a in mine)
    endpoints = {a.endpoint for a in mine if a.endpoint}
    return [
        a
        for job, a in shared
        if job != job_id and a.endpoint in endpoints and a.started_at < end and a.ended_at > start
    ]
