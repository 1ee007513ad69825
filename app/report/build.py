"""The report facade for the CLI and the API: load a job's rows, price them, compute."""

from __future__ import annotations

from app.db.engine import Database
from app.report.compute import JobReport, compute_report
from app.report.load import load_job_rows
from app.report.pricing import pricing_from_settings
from app.report.schema import ServerTokens
from app.report.server_tokens import server_tokens
from app.settings import Settings


def build_report(db: Database, settings: Settings, job_id: str, *, slowest: int = 10) -> JobReport:
    """The report of `job_id`; raises KeyError when there is no such job."""
    rows = load_job_rows(db, job_id)
    return compute_report(rows, pricing_from_settings(settings), slowest=slowest)


def job_server_tokens(db: Database, job_id: str) -> list[ServerTokens]:
    """The job's server-side token figures per endpoint (for the metrics of a finished job)."""
    rows = load_job_rows(db, job_id)
    return server_tokens(rows.server_samples, rows.attempts, rows.neighbours)
