"""One entry point for the report's formats."""

from __future__ import annotations

import io
from enum import StrEnum

from rich.console import Console

from app.report.compute import JobReport
from app.report.render_csv import render_csv
from app.report.render_html import render_html
from app.report.render_json import render_json
from app.report.render_table import report_tables


class ReportFormat(StrEnum):
    JSON = "json"
    CSV = "csv"
    HTML = "html"
    TABLE = "table"


def render_report(
    job: JobReport, fmt: ReportFormat, *, per_attempt: bool = False, width: int = 120
) -> str:
    """The report as text; `per_attempt` switches CSV to one row per attempt."""
    if fmt is ReportFormat.JSON:
        return render_json(job.report)
    if fmt is ReportFormat.CSV:
        return render_csv(job, per_attempt=per_attempt)
    if fmt is ReportFormat.HTML:
        return render_html(job)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None)
    for table in report_tables(job.report):
        console.print(table)
    return buffer.getvalue()
