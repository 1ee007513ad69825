"""Reading a job's rows for the report: the one place the report touches the database."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

from app.db import attempts, documents, jobs, pages, server_samples
from app.db.dialect import as_utc
from app.db.engine import Database, Session
from app.db.models import ServerSample
from app.report.rows import AttemptRow, DocumentRow, JobRows, ListedJob, PageRow, ServerSampleRow

TAIL_CHARS = 2000

# The attempt columns the report reads: AttemptRow's fields, by name (the tail apart).
ATTEMPT_COLUMNS = tuple(f.name for f in fields(AttemptRow) if f.name != "output_tail")


def _aware(moment: datetime | None) -> datetime | None:
    return None if moment is None else as_utc(moment)


def attempt_row(values: dict[str, Any], tails: dict[int, str]) -> AttemptRow:
    values["started_at"] = as_utc(values["started_at"])
    values["ended_at"] = as_utc(values["ended_at"])
    return AttemptRow(**values, output_tail=tails.get(values["id"]))


def load_job_rows(
    db: Database, job_id: str, *, shared: Collection[str] | None = None, tails: bool = True
) -> JobRows:
    """The job's documents, pages and attempts, plus other jobs' attempts that shared its
    endpoints while it ran (for GPU time sharing). For costs alone (a pages table): `shared`
    names the endpoints whose neighbours count (the GPU-priced ones; None: every endpoint),
    and `tails=False` leaves the degenerate attempts' output tails out."""
    with db.session() as session:
        job = jobs.get_job(session, job_id)
        tail = attempts.degenerate_tails(session, job_id, TAIL_CHARS) if tails else {}
        own = [
            attempt_row(values, tail)
            for values in attempts.job_attempts(session, job_id, ATTEMPT_COLUMNS)
        ]
        endpoints = {a.endpoint for a in own if a.endpoint}
        if shared is not None:
            endpoints &= set(shared)
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


Owned = list[tuple[str, AttemptRow]]  # attempts with their job's id


def load_listed_rows(
    db: Database, jobs: Sequence[ListedJob], shared_endpoints: Collection[str]
) -> dict[str, JobRows]:
    """The rows of several jobs for a list's figures, in a few queries for all of them (not a
    few per job): pages and attempts, and other jobs' attempts beside them on
    `shared_endpoints` only (those whose busy time is shared out: the GPU-priced ones). No
    output tails, documents or server samples: a list's figures need none."""
    ids = [j.id for j in jobs]
    own: dict[str, list[AttemptRow]] = defaultdict(list)
    by_job: dict[str, list[PageRow]] = defaultdict(list)
    with db.session() as session:
        for values in attempts.jobs_attempts(session, ids, ATTEMPT_COLUMNS) if ids else []:
            own[values.pop("job_id")].append(attempt_row(values, {}))
        for job_id, *page in pages.jobs_page_outcomes(session, ids) if ids else []:
            by_job[job_id].append(PageRow(*page))
        listed = [a for rows in own.values() for a in rows]
        shared = _shared(session, listed, shared_endpoints)
    return {
        job.id: JobRows(
            job_id=job.id,
            plan=job.plan,
            status=job.status,
            started_at=_aware(job.started_at),
            finished_at=_aware(job.finished_at),
            pages=by_job.get(job.id, []),
            attempts=own.get(job.id, []),
            neighbours=_beside(job.id, own.get(job.id, []), shared),
        )
        for job in jobs
    }


def _shared(session: Session, listed: list[AttemptRow], endpoints: Collection[str]) -> Owned:
    """Every attempt on these endpoints while the listed attempts ran, with its job."""
    used = {a.endpoint for a in listed if a.endpoint and a.endpoint in endpoints}
    if not used:
        return []
    during = (min(a.started_at for a in listed), max(a.ended_at for a in listed))
    found = attempts.attempts_during(session, used, during, ATTEMPT_COLUMNS)
    return [(values.pop("job_id"), attempt_row(values, {})) for values in found]


def _beside(job_id: str, mine: list[AttemptRow], shared: Owned) -> list[AttemptRow]:
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
