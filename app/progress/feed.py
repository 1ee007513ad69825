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

from app.db import documents, jobs, pages
from app.db.dialect import as_utc
from app.db.engine import Database, Session
from app.db.models import Page
from app.domain import TERMINAL_PAGE_STATUSES, DocumentStatus, JobStatus, page_outcome
from app.progress.eta import PACE_WINDOW, eta_seconds

PAGE_FINISHED = "page.finished"
JOB_EVENTS = ("job.finished", "job.failed", "job.cancelled")


@dataclass(frozen=True)
class JobEvent:
    id: str
    kind: str  # page.finished or one of JOB_EVENTS
    data: dict[str, Any]


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
    counts = pages.count_pages_by_status(session, job_id)
    finished = sum(n for s, n in counts.items() if s in TERMINAL_PAGE_STATUSES)
    total = sum(counts.values())
    latest = pages.latest_finish_times(session, job_id, PACE_WINDOW)
    eta = eta_seconds([as_utc(t) for t in latest], total - finished)
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
            # The status is read before the pages: a done job's pages are all visible.
            status = jobs.job_status(session, self.job_id)
            if status is None:
                raise KeyError(f"no job {self.job_id!r}")
            since = None if self._watermark is None else self._watermark - self.grace
            finished = pages.finished_pages(session, self.job_id, since)
            fresh = [p for p in finished if p.id not in self._sent]
            progress = progress_data(session, self.job_id) if fresh or _ended(status) else {}
            end = _ended(status) and job_end_kind(status, self._documents(session))
        events = [self._page_event(p, progress) for p in fresh]
        if end:
            self.ended = True
            events.append(JobEvent(_event_id(self._watermark, "end"), end, {**progress}))
        return events

    def _documents(self, session: Session) -> dict[str, int]:
        return documents.count_documents_by_status(session, self.job_id)

    def _page_event(self, page: Page, progress: dict[str, Any]) -> JobEvent:
        self._sent.add(page.id)
        if page.finished_at is not None:
            moment = as_utc(page.finished_at)
            self._watermark = max(self._watermark or moment, moment)
        data = {"job_id": self.job_id, "page": page_data(page), **progress}
        return JobEvent(_event_id(page.finished_at, page.id), PAGE_FINISHED, data)


def _ended(status: str) -> bool:
    return status in (JobStatus.DONE, JobStatus.CANCELLED)
