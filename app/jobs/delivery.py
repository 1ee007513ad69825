"""Delivering a job's results where it asked (its results prefix, its pre-signed URLs) as the
last step of its end: a job reads done only once they are there.

An outage (`StoreUnavailable`: the store or a URL's host unreachable, a 5xx) is tried again
`delivery_retries` times with backoff; a refusal (`ObjectRefused`: an expired or refused URL,
a missing results bucket, a private address) is not. A job whose results could not be sent
reads `undelivered`, with the reason under `delivery` in its options (the API shows both);
`folio serve` tries it again when it starts, as it resumes unfinished jobs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from app.db import jobs
from app.db.engine import Database
from app.domain import JobStatus
from app.errors import FolioError, ObjectRefused, StoreUnavailable

log = logging.getLogger(__name__)
Publish = Callable[[str], str | None]  # sends the job's results; where they went, or None


class DeliveryFailed(FolioError):
    """The job's results could not be sent where it asked; the job reads `undelivered`."""

    category = "undelivered"


def delivery_backoff_s(tries: int, first_s: float) -> float:
    """`first_s`, doubling after each failed try, capped at 5 minutes."""
    return float(min(300.0, first_s * 2 ** max(0, tries - 1)))


def deliver(
    db: Database,
    job_id: str,
    publish: Publish,
    retries: int,
    first_retry_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """`publish(job_id)`, tried again on an outage; the outcome recorded on the job. Raises
    DeliveryFailed, after marking the job `undelivered`, when the results are not there."""
    tries = 0
    while True:
        tries += 1
        try:
            where = publish(job_id)
        except StoreUnavailable as exc:
            if tries <= retries:
                delay = delivery_backoff_s(tries, first_retry_s)
                log.warning("job %s: results not sent (%s); retry in %.1f s", job_id, exc, delay)
                sleep(delay)
                continue
            failure: FolioError = exc
        except ObjectRefused as exc:
            failure = exc
        else:
            if where is not None:
                _record(db, job_id, {"status": "delivered", "tries": tries, "where": where})
            return
        mark_undelivered(db, job_id, tries, failure)
        raise DeliveryFailed(str(failure)) from failure


def mark_undelivered(db: Database, job_id: str, tries: int, failure: FolioError) -> None:
    """The job's results are not where it asked: it reads `undelivered`, and says why."""
    category = getattr(failure, "category", "undelivered")
    log.error("job %s: results not sent after %d tries: %s", job_id, tries, failure)
    _record(
        db,
        job_id,
        {"status": "failed", "tries": tries, "category": category, "error": str(failure)},
        JobStatus.UNDELIVERED,
    )


def _record(
    db: Database, job_id: str, delivery: dict[str, Any], status: JobStatus | None = None
) -> None:
    with db.session() as session:
        jobs.record_delivery(session, job_id, delivery, status)


def requeue_undelivered(db: Database, job_id: str) -> None:
    """An `undelivered` job taken up again reads `pending` until it runs."""
    with db.session() as session:
        jobs.requeue_undelivered(session, job_id)
