"""The delivery outbox in the database: rows made once per event, claimed by one sender at a
time, retried with backoff until delivered or a day has passed. Any process may run it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from app.db import webhooks as rows
from app.db.dialect import as_utc
from app.db.engine import Session
from app.db.models import ApiKey, Job, new_id
from app.db.webhooks import DELIVERED, FAILED, PENDING
from app.domain import JobStatus
from app.progress.feed import job_end_kind
from app.webhooks.options import WebhookOptions
from app.webhooks.payloads import envelope, job_data, page_event_data
from app.webhooks.signing import new_secret

# Every page ended but the results could not be sent where the job asked (app/jobs/delivery.py);
# job.finished (or job.failed) follows once they are.
JOB_UNDELIVERED = "job.undelivered"
PAGE_FINISHED = "page.finished"
MAX_BACKOFF_S = 3600.0


@dataclass(frozen=True)
class Target:
    """Where a job's webhooks go, and whether its pages' events go too."""

    url: str
    page_events: bool


def target_of(options: dict[str, Any], key: ApiKey) -> Target | None:
    """The job's own `callback_url` (with its `callback_events`), else its key's default."""
    if url := options.get("callback_url"):
        return Target(url, PAGE_FINISHED in (options.get("callback_events") or []))
    if key.webhook_url:
        return Target(key.webhook_url, key.webhook_page_events)
    return None


def backoff_s(attempts: int, first_s: float) -> float:
    """Seconds before the next try after `attempts` failed ones: doubling, capped at an hour."""
    return float(min(MAX_BACKOFF_S, first_s * 2 ** max(0, attempts - 1)))


def schedule(session: Session, now: datetime, window: timedelta) -> int:
    """Make the outbox rows of every event not yet in it (jobs open or ended within
    `window`); rows another process made first are left as they are. Rows made."""
    made = 0
    for job, key in rows.jobs_to_notify(session, now - window):
        target = target_of(job.options or {}, key)
        if target is None:
            continue
        if key.webhook_secret is None:
            key.webhook_secret = new_secret()
        if target.page_events:
            made += _schedule_pages(session, job, key, target)
        end = job_end_kind(job.status, _document_counts(job)) if _ended(job) else None
        dedupe = f"{job.id}:end"
        if end and not rows.delivery_exists(session, dedupe):
            made += _insert(session, job, key, target.url, end, dedupe, job_data(session, job))
        if job.status == JobStatus.UNDELIVERED:  # before its end: sent once, when first seen
            dedupe = f"{job.id}:undelivered"
            if not rows.delivery_exists(session, dedupe):
                data = job_data(session, job)
                data["job"]["delivery"] = (job.options or {}).get("delivery")
                made += _insert(session, job, key, target.url, JOB_UNDELIVERED, dedupe, data)
    return made


def _ended(job: Job) -> bool:
    return job.status in (JobStatus.DONE, JobStatus.CANCELLED)


def _schedule_pages(session: Session, job: Job, key: ApiKey, target: Target) -> int:
    sent = rows.dedupe_keys(session, job.id, PAGE_FINISHED)
    made = 0
    for page in rows.ended_pages(session, job.id):
        dedupe = f"{job.id}:page:{page.id}"
        if dedupe not in sent:
            data = page_event_data(job, page)
            made += _insert(session, job, key, target.url, PAGE_FINISHED, dedupe, data)
    return made


def _insert(
    session: Session,
    job: Job,
    key: ApiKey,
    url: str,
    kind: str,
    dedupe: str,
    data: dict[str, Any],
) -> int:
    event_id = new_id()
    row = {
        "job_id": job.id,
        "api_key_id": key.id,
        "event": kind,
        "event_id": event_id,
        "dedupe_key": dedupe,
        "url": url,
        "payload": envelope(kind, event_id, data),
        "status": PENDING,
        "attempts": 0,
        "created_at": datetime.now(UTC),
        "next_at": datetime.now(UTC),
    }
    return rows.add_delivery(session, row)


def _document_counts(job: Job) -> dict[str, int]:
    counts: dict[str, int] = {}
    for document in job.documents:
        counts[document.status] = counts.get(document.status, 0) + 1
    return counts


@dataclass(frozen=True)
class SendResult:
    status_code: int | None
    latency_s: float
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def record(session: Session, delivery_id: int, sent: SendResult, options: WebhookOptions) -> None:
    """Store the attempt; the delivery is delivered, retried later, or failed for good."""
    now = datetime.now(UTC)
    latency_s = round(sent.latency_s, 4)
    delivery = rows.add_try(session, delivery_id, now, sent.status_code, latency_s, sent.error)
    next_at = now + timedelta(seconds=backoff_s(delivery.attempts, options.first_retry_s))
    created = as_utc(delivery.created_at)
    if sent.delivered or next_at > created + options.give_up:
        delivery.status = DELIVERED if sent.delivered else FAILED
        delivery.finished_at = now
    else:
        delivery.next_at = next_at
