"""What a webhook says: the event, the job's counts, a report summary and links."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.db import webhooks as rows
from app.db.dialect import as_utc
from app.db.engine import Session
from app.db.models import Job, Page
from app.progress.feed import page_data, progress_data


def envelope(kind: str, event_id: str, data: dict[str, Any]) -> dict[str, Any]:
    created = datetime.now(UTC).isoformat(timespec="seconds")
    return {"id": event_id, "type": kind, "created": created, "data": data}


def links(job_id: str) -> dict[str, str]:
    base = f"/v1/jobs/{job_id}"
    names = ("documents", "pages", "report", "results", "events", "deliveries")
    return {"self": base, **{name: f"{base}/{name}" for name in names}}


def report_summary(session: Session, job_id: str) -> dict[str, Any]:
    """The attempts behind the job: how many, how many looped, tokens and engine seconds."""
    totals = rows.attempt_totals(session, job_id)
    return {
        "attempts": totals.attempts,
        "degenerate_attempts": totals.degenerate,
        "completion_tokens": totals.completion_tokens,
        "engine_seconds": round(totals.engine_s, 3),
    }


def job_data(session: Session, job: Job) -> dict[str, Any]:
    progress = progress_data(session, job.id)
    outcomes: dict[str, int] = {}
    for page in rows.pages_of_job(session, job.id):
        outcome = page_data(page)["outcome"]
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return {
        "job": {
            "id": job.id,
            "status": job.status,
            "plan": job.plan_name,
            "metadata": (job.options or {}).get("metadata", {}),
            "created_at": _moment(job.created_at),
            "finished_at": _moment(job.finished_at),
            "pages": progress["pages"],
            "outcomes": outcomes,
            "report": report_summary(session, job.id),
            "links": links(job.id),
        }
    }


def _moment(moment: datetime | None) -> str | None:
    """RFC 3339 with its offset (`+00:00`), as docs/integrations.md promises: SQLite gives a
    moment back without its zone."""
    return None if moment is None else as_utc(moment).isoformat()


def page_event_data(job: Job, page: Page) -> dict[str, Any]:
    return {"job_id": job.id, "page": page_data(page), "links": links(job.id)}
