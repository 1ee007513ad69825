"""The webhook outbox's rows: the jobs whose events are due, a delivery made once per event
(whichever process sees it first), claimed by one sender at a time, each try stored; and the
job's figures a webhook's payload quotes."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from app.db.dialect import as_utc, insert_new
from app.db.models import ApiKey, Attempt, Job, Page, WebhookAttempt, WebhookDelivery
from app.domain import TERMINAL_PAGE_STATUSES

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"  # a delivery's status


def jobs_to_notify(session: Session, since: datetime) -> list[tuple[Job, ApiKey]]:
    """Jobs still open or ended since `since`, each with the key that made it."""
    query = (
        select(Job, ApiKey)
        .join(ApiKey, Job.api_key_id == ApiKey.id)
        .where(or_(Job.finished_at.is_(None), Job.finished_at >= since))
    )
    return [(job, key) for job, key in session.execute(query).all()]


def delivery_exists(session: Session, dedupe: str) -> bool:
    query = select(WebhookDelivery.id).where(WebhookDelivery.dedupe_key == dedupe)
    return session.scalar(query) is not None


def dedupe_keys(session: Session, job_id: str, event: str) -> set[str]:
    """The dedupe keys of the job's deliveries of one kind of event made so far."""
    query = select(WebhookDelivery.dedupe_key).where(
        WebhookDelivery.job_id == job_id, WebhookDelivery.event == event
    )
    return set(session.scalars(query))


def ended_pages(session: Session, job_id: str) -> list[Page]:
    """The job's terminal pages in the order they ended."""
    query = (
        select(Page)
        .where(Page.job_id == job_id, Page.status.in_(TERMINAL_PAGE_STATUSES))
        .order_by(Page.finished_at, Page.id)
    )
    return list(session.scalars(query))


def pages_of_job(session: Session, job_id: str) -> list[Page]:
    return list(session.scalars(select(Page).where(Page.job_id == job_id)))


@dataclass(frozen=True)
class AttemptTotals:
    """The attempts behind a job: how many, how many looped, tokens and engine seconds."""

    attempts: int
    degenerate: int
    completion_tokens: int
    engine_s: float


def attempt_totals(session: Session, job_id: str) -> AttemptTotals:
    row = session.execute(
        select(
            func.count(),
            func.count(Attempt.verdict_kind),
            func.coalesce(func.sum(Attempt.completion_tokens), 0),
            func.coalesce(func.sum(Attempt.duration_s), 0.0),
        ).where(Attempt.job_id == job_id)
    ).one()
    return AttemptTotals(int(row[0]), int(row[1]), int(row[2] or 0), float(row[3]))


def add_delivery(session: Session, row: dict[str, Any]) -> int:
    """Make the delivery unless another process made its event's first: rows made (1 or 0)."""
    return insert_new(session, WebhookDelivery, row)


def due(
    session: Session, now: datetime, limit: int, busy_urls: Collection[str] = ()
) -> list[tuple[int, str]]:
    """Pending deliveries whose time has come and that no sender holds, oldest first, with
    their URLs; none to `busy_urls` (receivers whose lanes are full)."""
    query = select(WebhookDelivery.id, WebhookDelivery.url).where(
        WebhookDelivery.status == PENDING, WebhookDelivery.next_at <= now, _unheld(now)
    )
    if busy_urls:
        query = query.where(WebhookDelivery.url.not_in(list(busy_urls)))
    ordered = query.order_by(WebhookDelivery.next_at, WebhookDelivery.id).limit(limit)
    return [(int(row[0]), str(row[1])) for row in session.execute(ordered).all()]


def claim(session: Session, delivery_id: int, now: datetime, lease: timedelta) -> bool:
    """Hold the delivery for one send; False when another sender took it first."""
    result = session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id == delivery_id, WebhookDelivery.status == PENDING, _unheld(now))
        .values(lease_until=now + lease)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def _unheld(now: datetime) -> Any:
    return or_(WebhookDelivery.lease_until.is_(None), WebhookDelivery.lease_until < now)


@dataclass(frozen=True)
class Outgoing:
    """What one send of a delivery needs: where, what, and the key's signing secret."""

    url: str
    event: str
    event_id: str
    payload: dict[str, Any]
    secrets: tuple[str, ...]  # the key's secret, and the one before it during a rotation


def outgoing(session: Session, delivery_id: int, now: datetime) -> Outgoing:
    delivery, key = session.execute(
        select(WebhookDelivery, ApiKey)
        .join(ApiKey, WebhookDelivery.api_key_id == ApiKey.id)
        .where(WebhookDelivery.id == delivery_id)
    ).one()
    secrets = signing_secrets(key, now)
    return Outgoing(delivery.url, delivery.event, delivery.event_id, delivery.payload, secrets)


def signing_secrets(key: ApiKey, now: datetime) -> tuple[str, ...]:
    """The secrets a key's webhooks are signed with now: its own, and after a rotation the
    previous one until its grace ends (a receiver may still check with it)."""
    found = [key.webhook_secret] if key.webhook_secret else []
    until = key.previous_webhook_secret_until
    if key.previous_webhook_secret and until is not None and as_utc(until) > now:
        found.append(key.previous_webhook_secret)
    return tuple(found)


def add_try(
    session: Session,
    delivery_id: int,
    at: datetime,
    status_code: int | None,
    latency_s: float,
    error: str | None,
) -> WebhookDelivery:
    """Store one try of the delivery, released by its sender; the delivery, for its fate."""
    delivery = session.get_one(WebhookDelivery, delivery_id)
    session.add(
        WebhookAttempt(
            delivery_id=delivery_id,
            attempted_at=at,
            status_code=status_code,
            latency_s=latency_s,
            error=error,
        )
    )
    delivery.attempts += 1
    delivery.lease_until = None
    return delivery
