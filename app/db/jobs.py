"""Jobs: made, started, ended, found again (an interrupted run, the server's unfinished API
jobs), their delivery recorded, and deleted when retention asks."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from app.db.models import Job
from app.domain import Executor, JobStatus


def create_job(
    session: Session, source: str, out_dir: str | None, plan_name: str, **extra: Any
) -> Job:
    job = Job(
        status=JobStatus.PENDING, source=source, out_dir=out_dir, plan_name=plan_name, **extra
    )
    session.add(job)
    session.flush()
    return job


def get_job(session: Session, job_id: str) -> Job:
    """The job; KeyError when there is none."""
    job = session.get(Job, job_id)
    if job is None:
        raise KeyError(f"no job {job_id!r}")
    return job


def job_plan(session: Session, job_id: str) -> str:
    plan = session.scalar(select(Job.plan_name).where(Job.id == job_id))
    if plan is None:
        raise KeyError(f"no job {job_id!r}")
    return plan


def job_options(session: Session, job_id: str) -> dict[str, Any] | None:
    return session.scalar(select(Job.options).where(Job.id == job_id))


def job_status(session: Session, job_id: str) -> str | None:
    """The job's status; None when there is no such job."""
    return session.scalar(select(Job.status).where(Job.id == job_id))


def destination(session: Session, job_id: str) -> tuple[str | None, dict[str, Any], int | None]:
    """Where the job's results go: its output folder or prefix, its options (their
    `result_urls`), and the API key that owns it."""
    row = session.execute(
        select(Job.out_dir, Job.options, Job.api_key_id).where(Job.id == job_id)
    ).first()
    if row is None:
        raise KeyError(f"no job {job_id!r}")
    return row[0], row[1] or {}, row[2]


def mark_job_running(session: Session, job_id: str, executor: Executor) -> None:
    """The job runs now, on `executor` (kept in its options, so no schema change: the
    lost-task check must know which jobs Celery runs)."""
    set_job_status(session, job_id, JobStatus.RUNNING)
    set_job_executor(session, job_id, executor)


def set_job_executor(session: Session, job_id: str, executor: Executor) -> None:
    options = session.scalar(select(Job.options).where(Job.id == job_id)) or {}
    executed = {**options, "executor": executor.value}
    session.execute(update(Job).where(Job.id == job_id).values(options=executed))


def set_job_status(session: Session, job_id: str, status: JobStatus) -> None:
    values: dict[str, Any] = {"status": status}
    now = datetime.now(UTC)
    if status == JobStatus.RUNNING:
        values["started_at"] = func.coalesce(Job.started_at, now)
    if status in (JobStatus.DONE, JobStatus.CANCELLED):
        values["finished_at"] = now
    query = update(Job).where(Job.id == job_id)
    if status != JobStatus.CANCELLED:
        # A cancelled job stays cancelled, whatever its in-flight pages do afterwards.
        query = query.where(Job.status != JobStatus.CANCELLED)
    session.execute(query.values(**values))


def record_delivery(
    session: Session, job_id: str, delivery: dict[str, Any], status: JobStatus | None = None
) -> None:
    """Keep how the job's results were sent (under `delivery` in its options) and, unless the
    job was cancelled, give it `status`."""
    job = session.get(Job, job_id)
    if job is None:
        return
    job.options = {**(job.options or {}), "delivery": delivery}
    if status is not None and job.status != JobStatus.CANCELLED:
        set_job_status(session, job_id, status)


def requeue_undelivered(session: Session, job_id: str) -> None:
    """An `undelivered` job taken up again reads `pending` until it runs."""
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == JobStatus.UNDELIVERED)
        .values(status=JobStatus.PENDING)
    )


def latest_job_for_source(session: Session, source: str) -> str | None:
    """The id of the newest job made from `source`."""
    query = select(Job.id).where(Job.source == source).order_by(Job.created_at.desc())
    return session.scalars(query).first()


def unfinished_local_job(session: Session, source: str, out_dir: str, plan_name: str) -> Job | None:
    """The newest pending or running job of the CLI (no API key) made from `source` into
    `out_dir` with this plan."""
    return session.scalars(
        select(Job)
        .where(Job.source == source, Job.out_dir == out_dir, Job.api_key_id.is_(None))
        .where(Job.plan_name == plan_name)
        .where(Job.status.in_([JobStatus.PENDING, JobStatus.RUNNING]))
        .order_by(Job.created_at.desc())
    ).first()


def unfinished_api_jobs(session: Session, statuses: Sequence[JobStatus]) -> list[str]:
    """API jobs in one of `statuses`, oldest first."""
    query = select(Job.id).where(Job.api_key_id.is_not(None), Job.status.in_(statuses))
    return list(session.scalars(query.order_by(Job.created_at)))


def ended_before(
    session: Session, statuses: Sequence[JobStatus], cutoff: datetime
) -> list[tuple[str, str]]:
    """Jobs in one of `statuses` that finished before `cutoff`: id and source."""
    query = select(Job.id, Job.source).where(Job.status.in_(statuses), Job.finished_at < cutoff)
    return [(job_id, source) for job_id, source in session.execute(query)]


def sources_starting(session: Session, prefix: str) -> list[str]:
    """The sources of all jobs that start with `prefix`."""
    return list(session.scalars(select(Job.source).where(Job.source.startswith(prefix))))


def delete_jobs(session: Session, job_ids: Collection[str]) -> int:
    """Delete the jobs; their documents, pages and attempts go with them (ON DELETE CASCADE)."""
    result = session.execute(delete(Job).where(Job.id.in_(list(job_ids))))
    return int(result.rowcount)  # type: ignore[attr-defined]
