"""Readings of the endpoint servers' counters (vLLM's /metrics) taken for a job."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import ServerSample, utcnow

if TYPE_CHECKING:  # a plain dataclass; the reader's HTTP stays out of the data layer
    from app.servermetrics.counters import ServerCounters


def record_server_sample(
    session: Session,
    job_id: str,
    endpoint: str,
    metrics_url: str,
    worker: str,
    phase: str,
    counters: ServerCounters | None,
    error: str | None = None,
) -> None:
    """Store a server reading; a worker's `end` reading replaces its previous one."""
    sample = session.scalar(
        select(ServerSample).where(
            ServerSample.job_id == job_id,
            ServerSample.endpoint == endpoint,
            ServerSample.worker == worker,
            ServerSample.phase == phase,
        )
    )
    if sample is None:
        sample = ServerSample(
            job_id=job_id, endpoint=endpoint, metrics_url=metrics_url, worker=worker, phase=phase
        )
        session.add(sample)
    sample.taken_at = utcnow()
    sample.error = error
    sample.generation_tokens = counters.generation_tokens if counters else None
    sample.prompt_tokens = counters.prompt_tokens if counters else None
    sample.requests = counters.requests if counters else None
    sample.server_started = counters.started if counters else None


def job_samples(session: Session, job_id: str) -> list[ServerSample]:
    """The job's readings in the order they were first taken."""
    query = select(ServerSample).where(ServerSample.job_id == job_id).order_by(ServerSample.id)
    return list(session.scalars(query))
