"""Reading a job's rows for the report: the one place the report touches the database."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any

from app.db import attempts, documents, jobs, pages, server_samples
from app.db.dialect import as_utc
from app.db.engine import Database
from app.db.models import ServerSample
from app.report.rows import AttemptRow, DocumentRow, JobRows, PageRow, ServerSampleRow

TAIL_CHARS = 2000

# The attempt columns the report reads: AttemptRow's fields, by name (the tail apart).
ATTEMPT_COLUMNS = tuple(f.name for f in fields(AttemptRow) if f.name != "output_tail")


def _aware(moment: datetime | None) -> datetime | None:
    return None if moment is None else as_utc(moment)


def attempt_row(values: dict[str, Any], tails: dict[int, str]) -> AttemptRow:
    values["started_at"] = as_utc(values["started_at"])
    values["ended_at"] = as_utc(values["ended_at"])
    return AttemptRow(**values, output_tail=tails.get(values["id"]))


def load_job_rows(db: Database, job_id: str) -> JobRows:
    """The job's documents, pages and attempts, plus other jobs' attempts that shared its
    endpoints while it ran (for GPU time sharing)."""
    with db.session() as session:
        job = jobs.get_job(session, job_id)
        tails = attempts.degenerate_tails(session, job_id, TAIL_CHARS)
        own = [
            attempt_row(values, tails)
            for values in attempts.job_attempts(session, job_id, ATTEMPT_COLUMNS)
        ]
        endpoints = {a.endpoint for a in own if a.endpoint}
        beside = []
        if endpoints:
            during = (min(a.started_at for a in own), max(a.ended_at for a in own))
            found = attempts.attempts_beside(session, job_id, endpoints, during, ATTEMPT_COLUMNS)
            beside = [attempt_row(values, {}) for values in found]
        return JobRows(
            job_id=job.id,
            plan=job.plan_name,
            status=job.status,
            started_at=_aware(job.started_at),
            finished_at=_aware(job.finished_at),
            documents=[DocumentRow(*d) for d in documents.document_statuses(session, job_id)],
            pages=[PageRow(*p) for p in pages.page_outcomes(session, job_id)],
            attempts=own,
            neighbours=beside,
            server_samples=[_sample(s) for s in server_samples.job_samples(session, job_id)],
            loop_stops=attempts.loop_stops_by_endpoint(session, job_id),
        )


def _sample(s: ServerSample) -> ServerSampleRow:
    return ServerSampleRow(
        s.endpoint,
        s.metrics_url,
        s.worker,
        s.phase,
        as_utc(s.taken_at),
        s.generation_tokens,
        s.prompt_tokens,
        s.requests,
        s.server_started,
        s.error,
    )
