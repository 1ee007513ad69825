"""The report facade for the CLI and the API: load a job's rows, price them, compute."""

from __future__ import annotations

from collections.abc import Sequence

from app.db.engine import Database
from app.report.compute import JobReport, compute_report
from app.report.load import load_job_rows, load_listed_rows
from app.report.pricing import Pricing, pricing_from_settings
from app.report.rows import ListedJob
from app.report.schema import ServerTokens
from app.report.server_tokens import server_tokens
from app.settings import Settings


def build_report(db: Database, settings: Settings, job_id: str, *, slowest: int = 10) -> JobReport:
    """The report of `job_id`; raises KeyError when there is no such job."""
    rows = load_job_rows(db, job_id)
    return compute_report(rows, pricing_from_settings(settings), slowest=slowest)


def listed_reports(
    db: Database, jobs: Sequence[ListedJob], pricing: Pricing
) -> dict[str, JobReport]:
    """The reports of a list of jobs by job id, as each job's alone but for what a list does
    not show: no output tails, documents or server figures (`load_listed_rows`)."""
    rows = load_listed_rows(db, jobs, pricing.gpu_priced())
    return {
        job_id: compute_report(job_rows, pricing, slowest=0, listed=0)
        for job_id, job_rows in rows.items()
    }


def job_server_tokens(db: Database, job_id: str) -> list[ServerTokens]:
    """The job's server-side token figures per endpoint (for the metrics of a finished job)."""
    rows = load_job_rows(db, job_id)
    return server_tokens(rows.server_samples, rows.attempts, rows.neighbours)
