"""Attempts: one row per engine call. Its columns are `EngineResult`'s where the names
agree (`attempt_row`); the reads give a page's history to the retry plan, a job's totals
and answers to its results, and the report its columns by name."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import Attempt
from app.db.page_path import PageWork
from app.domain import (
    CLOSE_PROBE_TOKENS,
    GROUNDING_OVERRULED,
    VERDICT_READ_CPU_MS,
    AttemptRole,
    AttemptStatus,
    EngineResult,
)
from app.retry.plan import PastAttempt, loop_stop
from app.settings import PlanStep

# The attempt's columns that an EngineResult carries under the same name.
_RESULT_COLUMNS = tuple(
    column.name
    for column in Attempt.__table__.columns
    if column.name in {f.name for f in fields(EngineResult)}
)
# Facts an attempt keeps in its params, read as integer columns: the name -> the params key.
PARAM_COLUMNS = {
    "probe_tokens": CLOSE_PROBE_TOKENS,
    "overruled": GROUNDING_OVERRULED,
    "read_cpu_ms": VERDICT_READ_CPU_MS,
}


def attempt_row(
    work: PageWork, step_index: int, step: PlanStep, result: EngineResult
) -> dict[str, Any]:
    """An attempt's column values: one model call, its parameters, tokens, timings, verdict."""
    verdict = result.verdict
    return {
        **{name: getattr(result, name) for name in _RESULT_COLUMNS},
        "job_id": work.job_id,
        "page_id": work.page_id,
        "step_index": step_index,
        "step_name": step.name,
        "engine": step.engine,
        "params": result.params or step.sampling(),
        "duration_s": result.duration_s,
        "verdict_kind": verdict.kind if verdict else None,
        "verdict_period": verdict.period if verdict else None,
        "verdict_onset": verdict.onset if verdict else None,
        "output": result.text,
        "output_chars": len(result.text),
        "answer_fields": result.answer_fields or None,
    }


def history(session: Session, page_id: int) -> list[PastAttempt]:
    rows = session.scalars(select(Attempt).where(Attempt.page_id == page_id).order_by(Attempt.id))
    return [
        PastAttempt(
            a.step_index,
            AttemptStatus(a.status),
            a.completion_tokens or 0,
            (a.verdict_kind, a.verdict_period or 0) if a.verdict_kind else None,
            loop_stop(
                a.verdict_kind,
                a.verdict_onset,
                a.output,
                a.aborted,
                a.finish_reason,
                a.verdict_period,
            ),
            a.role == AttemptRole.CONFIRM,
        )
        for a in rows
    ]


def attempt_output(session: Session, page_id: int, step_index: int) -> str | None:
    """The text of the page's latest attempt at a step."""
    query = select(Attempt.output).where(Attempt.page_id == page_id)
    query = query.where(Attempt.step_index == step_index).order_by(Attempt.id.desc())
    return session.scalars(query).first()


def totals_by_page(session: Session, job_ids: Collection[str]) -> dict[int, tuple[int, float]]:
    """Attempts and engine seconds per page, for every page of these jobs."""
    per_page = session.execute(
        select(Attempt.page_id, func.count(), func.sum(Attempt.duration_s))
        .where(Attempt.job_id.in_(list(job_ids)))
        .group_by(Attempt.page_id)
    )
    return {page_id: (count, total or 0.0) for page_id, count, total in per_page}


def answers(
    session: Session, job_ids: Collection[str]
) -> list[tuple[int, str, dict[str, Any] | None, dict[str, Any] | None]]:
    """The jobs' attempts that answered (ok, empty) with positions or fields, in order:
    page id, status, positions and the answer's fields."""
    rows = session.execute(
        select(Attempt.page_id, Attempt.status, Attempt.positions, Attempt.answer_fields)
        .where(Attempt.job_id.in_(list(job_ids)))
        .where(Attempt.status.in_([AttemptStatus.OK, AttemptStatus.EMPTY]))
        .where(Attempt.positions.is_not(None) | Attempt.answer_fields.is_not(None))
        .order_by(Attempt.id)
    )
    return [(page_id, status, positions, found) for page_id, status, positions, found in rows]


def _columns(names: Sequence[str]) -> list[Any]:
    table = Attempt.__table__.c
    return [
        table[name]
        if name in table
        else Attempt.params[PARAM_COLUMNS[name]].as_integer().label(name)
        for name in names
    ]


def job_attempts(session: Session, job_id: str, names: Sequence[str]) -> list[dict[str, Any]]:
    """The job's attempts in order, each as these columns (or `PARAM_COLUMNS`) by name."""
    query = select(*_columns(names)).where(Attempt.job_id == job_id).order_by(Attempt.id)
    return [row._asdict() for row in session.execute(query)]


def jobs_attempts(
    session: Session, job_ids: Collection[str], names: Sequence[str]
) -> list[dict[str, Any]]:
    """The attempts of several jobs in order, each as these columns by name, with its job id."""
    query = select(Attempt.job_id.label("job_id"), *_columns(names))
    query = query.where(Attempt.job_id.in_(list(job_ids))).order_by(Attempt.id)
    return [row._asdict() for row in session.execute(query)]


def attempts_during(
    session: Session,
    endpoints: Collection[str],
    during: tuple[datetime, datetime],
    names: Sequence[str],
) -> list[dict[str, Any]]:
    """Every job's attempts on these endpoints that overlapped `during`, with their job id."""
    query = select(Attempt.job_id.label("job_id"), *_columns(names)).where(
        Attempt.endpoint.in_(list(endpoints)),
        Attempt.started_at < during[1],
        Attempt.ended_at > during[0],
    )
    return [row._asdict() for row in session.execute(query)]


def attempts_beside(
    session: Session,
    job_id: str,
    endpoints: Collection[str],
    during: tuple[datetime, datetime],
    names: Sequence[str],
) -> list[dict[str, Any]]:
    """Other jobs' attempts on these endpoints that overlapped `during` (start, end)."""
    query = select(*_columns(names)).where(
        Attempt.job_id != job_id,
        Attempt.endpoint.in_(list(endpoints)),
        Attempt.started_at < during[1],
        Attempt.ended_at > during[0],
    )
    return [row._asdict() for row in session.execute(query)]


def degenerate_tails(session: Session, job_id: str, chars: int) -> dict[int, str]:
    """The last `chars` characters of each of the job's degenerate attempts, by attempt id."""
    rows = session.execute(
        select(Attempt.id, Attempt.output).where(
            Attempt.job_id == job_id, Attempt.status == AttemptStatus.DEGENERATE
        )
    )
    return {attempt_id: (output or "")[-chars:] for attempt_id, output in rows}


def loop_stops_by_endpoint(session: Session, job_id: str) -> dict[str, str]:
    """Per endpoint, the loop stop its latest attempt in the job relied on, and what the
    start-up probes found: the stops, and whether a closed stream stops the server's work
    (the attempt's params, recorded by the VLM engine)."""
    latest = (
        select(Attempt.endpoint, func.max(Attempt.id))
        .where(Attempt.job_id == job_id, Attempt.endpoint.is_not(None))
        .group_by(Attempt.endpoint)
    )
    ids = [attempt_id for _, attempt_id in session.execute(latest)]
    found: dict[str, str] = {}
    for endpoint, params in session.execute(
        select(Attempt.endpoint, Attempt.params).where(Attempt.id.in_(ids))
    ):
        if endpoint and params and params.get("loop_stop"):
            notes = [params.get(key) for key in ("loop_stop_probe", "loop_stop_close_probe")]
            said = "; ".join(str(note) for note in notes if note)
            found[endpoint] = params["loop_stop"] + (f" ({said})" if said else "")
    return found
