"""Reading a job's rows for the report: the one place the report touches the database."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.engine import Database
from app.db.models import Attempt, Document, Job, Page, ServerSample
from app.db.repo import loop_stops_by_endpoint
from app.domain import CLOSE_PROBE_TOKENS, GROUNDING_OVERRULED, AttemptStatus
from app.report.rows import AttemptRow, DocumentRow, JobRows, PageRow, ServerSampleRow

TAIL_CHARS = 2000

_ATTEMPT_COLUMNS = (
    Attempt.id,
    Attempt.page_id,
    Attempt.step_name,
    Attempt.engine,
    Attempt.model,
    Attempt.endpoint,
    Attempt.status,
    Attempt.started_at,
    Attempt.ended_at,
    Attempt.duration_s,
    Attempt.prompt_tokens,
    Attempt.completion_tokens,
    Attempt.tokens_estimated,
    Attempt.max_tokens,
    Attempt.finish_reason,
    Attempt.aborted,
    Attempt.stop_mechanism,
    Attempt.tokens_after_verdict,
    Attempt.verdict_kind,
    Attempt.verdict_period,
    Attempt.verdict_onset,
    Attempt.ttft_s,
    Attempt.params[CLOSE_PROBE_TOKENS].as_integer().label("probe_tokens"),
    Attempt.params[GROUNDING_OVERRULED].as_integer().label("overruled"),
    Attempt.role,
)


def _aware(moment: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; Folio writes UTC.
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


def _attempt(row: Any, tails: dict[int, str]) -> AttemptRow:
    values = row._asdict()
    values["started_at"] = _aware(values["started_at"])
    values["ended_at"] = _aware(values["ended_at"])
    return AttemptRow(**values, output_tail=tails.get(row.id))


def load_job_rows(db: Database, job_id: str) -> JobRows:
    """The job's documents, pages and attempts, plus other jobs' attempts that shared its
    endpoints while it ran (for GPU time sharing)."""
    with db.session() as session:
        job = session.get(Job, job_id)
        if job is None:
            raise KeyError(f"no job {job_id!r}")
        documents = session.execute(
            select(Document.name, Document.status)
            .where(Document.job_id == job_id)
            .order_by(Document.id)
        )
        pages = session.execute(
            select(Page.id, Document.name, Page.number, Page.status, Page.final_step)
            .add_columns(Page.failure_category)
            .join(Document, Page.document_id == Document.id)
            .where(Page.job_id == job_id)
            .order_by(Document.id, Page.number)
        )
        tails = _degenerate_tails(session, job_id)
        attempts = [
            _attempt(r, tails)
            for r in session.execute(
                select(*_ATTEMPT_COLUMNS).where(Attempt.job_id == job_id).order_by(Attempt.id)
            )
        ]
        return JobRows(
            job_id=job.id,
            plan=job.plan_name,
            status=job.status,
            started_at=_aware(job.started_at),
            finished_at=_aware(job.finished_at),
            documents=[DocumentRow(*d) for d in documents],
            pages=[PageRow(*p) for p in pages],
            attempts=attempts,
            neighbours=_neighbours(session, job_id, attempts),
            server_samples=_server_samples(session, job_id),
            loop_stops=loop_stops_by_endpoint(session, job_id),
        )


def _server_samples(session: Session, job_id: str) -> list[ServerSampleRow]:
    rows = session.scalars(
        select(ServerSample).where(ServerSample.job_id == job_id).order_by(ServerSample.id)
    )
    return [
        ServerSampleRow(
            s.endpoint,
            s.metrics_url,
            s.worker,
            s.phase,
            _aware(s.taken_at) or s.taken_at,
            s.generation_tokens,
            s.prompt_tokens,
            s.requests,
            s.server_started,
            s.error,
        )
        for s in rows
    ]


def _degenerate_tails(session: Session, job_id: str) -> dict[int, str]:
    rows = session.execute(
        select(Attempt.id, Attempt.output).where(
            Attempt.job_id == job_id, Attempt.status == AttemptStatus.DEGENERATE
        )
    )
    return {attempt_id: (output or "")[-TAIL_CHARS:] for attempt_id, output in rows}


def _neighbours(session: Session, job_id: str, attempts: list[AttemptRow]) -> list[AttemptRow]:
    endpoints = {a.endpoint for a in attempts if a.endpoint}
    if not endpoints:
        return []
    start = min(a.started_at for a in attempts)
    end = max(a.ended_at for a in attempts)
    rows = session.execute(
        select(*_ATTEMPT_COLUMNS).where(
            Attempt.job_id != job_id,
            Attempt.endpoint.in_(endpoints),
            Attempt.started_at < end,
            Attempt.ended_at > start,
        )
    )
    return [_attempt(r, {}) for r in rows]
