"""A job's events in the order its pages finished, read from the database by polling.

The database is the only state, so the feed works the same whichever process or worker
finished a page. An event's id carries the finishing time of its page (microseconds since the
epoch); a feed started from such an id (`Last-Event-ID`) replays every page that finished from
`grace_s` before it, because a page's finishing time is taken a moment before its transaction
commits: events are delivered at least once, and a client dedupes them by page id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import repo
from app.db.engine import Database
from app.db.models import Document, Job, Page
from app.domain import TERMINAL_PAGE_STATUSES, DocumentStatus, JobStatus, page_outcome
from app.progress.eta import PACE_WINDOW, eta_seconds

PAGE_FINISHED = "page.finished"
JOB_EVENTS = ("job.finished", "job.failed", "job.cancelled")


@dataclass(frozen=True)
class JobEvent:
    id: str
    kind: str  # page.finished or one of JOB_EVENTS
    data: dict[str, Any]


def as_utc(moment: datetime) -> datetime:
    """SQLite gives datetimes back without their zone; Folio writes them in UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def cursor_time(event_id: str | None) -> datetime | None:
    """The finishing time an event id carries; None for no id or one that is not Folio's."""
    micros = (event_id or "").split("-", 1)[0]
    if not micros.isdigit():
        return None
    return datetime.fromtimestamp(int(micros) / 1e6, UTC)


def _event_id(moment: datetime | None, tail: object) -> str:
    micros = int(as_utc(moment).timestamp() * 1e6) if moment else 0
    return f"{micros}-{tail}"


def job_end_kind(status: str, documents: dict[str, int]) -> str | None:
    """The job's final event: cancelled, failed (no document has any text) or finished."""
    if status == JobStatus.CANCELLED:
        return "job.cancelled"
    if status != JobStatus.DONE:
        return None
    with_text = sum(
        n for s, n in documents.items() if s not in (DocumentStatus.FAILED, DocumentStatus.PENDING)
    )
    return "job.finished" if with_text or not documents else "job.failed"


def page_data(page: Page) -> dict[str, Any]:
    outcome, retryable = page_outcome(page.status, page.failure_category)
    return {
        "id": page.id,
        "document_id": page.document_id,
        "number": page.number,
        "status": page.status,
        "outcome": outcome.value,
        "retryable": retryable,
        "failure_category": page.failure_category,
        "engine": page.final_engine,
    }


def progress_data(session: Session, job_id: str) -> dict[str, Any]:
    """Pages by status, how many are finished, and the ETA at the latest pages' pace."""
    counts = repo.count_pages_by_status(session, job_id)
    finished = sum(n for s, n in counts.items() if s in TERMINAL_PAGE_STATUSES)
    total = sum(counts.values())
    latest = session.scalars(
        select(Page.finished_at)
        .where(Page.job_id == job_id, Page.finished_at.is_not(None))
        .order_by(Page.finished_at.desc())
        .limit(PACE_WINDOW)
    )
    eta = eta_seconds([as_utc(t) for t in latest if t], total - finished)
    return {"pages": counts, "finished": finished, "total": total, "eta_s": eta}


class JobFeed:
    """The events of one job, each page's once per feed, then the job's end, then nothing."""

    def __init__(
        self, db: Database, job_id: str, last_event_id: str | None = None, grace_s: float = 10.0
    ) -> None:
        self.db = db
        self.job_id = job_id
        self.grace = timedelta(seconds=grace_s)
        self._watermark = cursor_time(last_event_id)
        self._sent: set[int] = set()
        self.ended = False

    def poll(self) -> list[JobEvent]:
        """The events since the last poll (none once the job's end was given)."""
        if self.ended:
            return []
        with self.db.session() as session:
            job = session.get(Job, self.job_id)
            if job is None:
                raise KeyError(f"no job {self.job_id!r}")
            status = job.status  # read before the pages: a done job's pages are all visible
            pages = [p for p in self._finished(session) if p.id not in self._sent]
            progress = progress_data(session, self.job_id) if pages or _ended(status) else {}
            end = _ended(status) and job_end_kind(status, _documents(session, self.job_id))
        events = [self._page_event(p, progress) for p in pages]
        if end:
            self.ended = True
            events.append(JobEvent(_event_id(self._watermark, "end"), end, {**progress}))
        return events

    def _finished(self, session: Session) -> list[Page]:
        query = select(Page).where(
            Page.job_id == self.job_id, Page.status.in_(TERMINAL_PAGE_STATUSES)
        )
        if self._watermark is not None:
            query = query.where(Page.finished_at >= self._watermark - self.grace)
        return list(session.scalars(query.order_by(Page.finished_at, Page.id)))

    def _page_event(self, page: Page, progress: dict[str, Any]) -> JobEvent:
        self._sent.add(page.id)
        if page.finished_at is not None:
            moment = as_utc(page.finished_at)
            self._watermark = max(self._watermark or moment, moment)
        data = {"job_id": self.job_id, "page": page_data(page), **progress}
        return JobEvent(_event_id(page.finished_at, page.id), PAGE_FINISHED, data)


def _ended(status: str) -> bool:
    return status in (JobStatus.DONE, JobStatus.CANCELLED)


def _documents(session: Session, job_id: str) -> dict[str, int]:
    rows = session.scalars(select(Document.status).where(Document.job_id == job_id))
    counts: dict[str, int] = {}
    for status in rows:
        counts[status] = counts.get(status, 0) + 1
    return counts
