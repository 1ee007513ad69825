"""The page path's statements, few by design: a page costs one claim and one closing transaction.

- `claim`: one UPDATE that takes the lease and returns everything processing needs (the
  document's path or URI with its ETag and SHA-256, the job's plan and options, how many
  attempts the page already has);
- `release`: a claimed page handed back untouched (its document's store is down);
- `close`: the page's last attempt row and its terminal status in one transaction;
- `renew_leases`: one UPDATE per heartbeat for every page a worker holds;
- `job_has_open_pages`: an index-only look, after the close has committed.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import (
    Connection,
    bindparam,
    exists,
    func,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session, aliased

from app.db.models import Attempt, Document, Job, Page
from app.domain import OPEN_PAGE_STATUSES, AttemptStatus, PageStatus


@dataclass(frozen=True)
class PageWork:
    """What processing a page needs to know, read in one go."""

    page_id: int
    job_id: str
    number: int
    path: str
    plan_name: str
    options: dict[str, Any]
    etag: str | None = None  # the stored object's, when `path` is its s3:// URI
    sha256: str | None = None  # what the document's bytes hash to, recorded at ingest


@dataclass(frozen=True)
class ClaimedPage:
    """A page this worker now holds: what processing needs, and its attempts so far."""

    work: PageWork
    attempts: int


@dataclass(frozen=True)
class Refusal:
    """Why a claim took nothing: the page is terminal already, or someone else holds it."""

    status: PageStatus
    lease_owner: str | None


@dataclass(frozen=True)
class RenderFacts:
    """What rendering learnt about a page, written with its terminal status."""

    size: tuple[int, int]
    has_text_layer: bool
    render_s: float


@dataclass(frozen=True)
class PageClose:
    """The terminal outcome written on a page when its processing ends."""

    status: PageStatus
    text: str | None = None
    engine: str | None = None
    step: str | None = None
    failure_category: str | None = None
    error: str | None = None
    rendered: RenderFacts | None = None


def is_open() -> Any:
    """`status IN ('pending', 'running')` with the values inline, as the partial index says
    (bound parameters would hide the match from the query planners)."""
    return Page.status.in_(_open_values())


def _open_values() -> Any:
    return bindparam("open", list(OPEN_PAGE_STATUSES), expanding=True, literal_execute=True)


@cache
def _claim_statement(many: bool = False) -> Any:
    """Built once per shape, with bound parameters, so each claim skips building and compiling
    it; `many`: the pages `page_ids` (an expanding list), each row led by its page id."""
    now = bindparam("now", type_=Page.lease_until.type)
    owner = bindparam("owner", type_=Page.lease_owner.type)
    # SQLite renders RETURNING's columns unqualified, where `id` would mean the subquery's own.
    own: dict[str, Any] = {c: literal_column(f"pages.{c}") for c in ("id", "document_id", "job_id")}
    document = Document.id == own["document_id"]
    path = select(Document.path).where(document).scalar_subquery()
    etag = select(Document.etag).where(document).scalar_subquery()
    sha256 = select(Document.sha256).where(document).scalar_subquery()
    plan = select(Job.plan_name).where(Job.id == own["job_id"]).scalar_subquery()
    options = select(Job.options).where(Job.id == own["job_id"]).scalar_subquery()
    tried = select(func.count(Attempt.id)).where(Attempt.page_id == own["id"]).scalar_subquery()
    lease_free = or_(
        Page.status == PageStatus.PENDING,
        Page.lease_owner == owner,
        Page.lease_until.is_(None),
        Page.lease_until < now,
    )
    which = (
        Page.id.in_(bindparam("page_ids", expanding=True))
        if many
        else Page.id == bindparam("page_id", type_=Page.id.type)
    )
    returned = (Page.job_id, Page.number, path, plan, options, tried, etag, sha256)
    return (
        update(Page)
        .where(which, is_open(), lease_free)
        .values(
            status=PageStatus.RUNNING,
            lease_owner=owner,
            lease_until=bindparam("lease_until", type_=Page.lease_until.type),
            started_at=func.coalesce(Page.started_at, now),
        )
        .returning(*((Page.id, *returned) if many else returned))
    )


def claim(conn: Connection, page_id: int, owner: str, lease_s: float) -> ClaimedPage | Refusal:
    """Take the page for `owner` unless it is terminal or another live owner holds it."""
    now = datetime.now(UTC)
    until = now + timedelta(seconds=lease_s)
    params = {"page_id": page_id, "owner": owner, "now": now, "lease_until": until}
    row = conn.execute(_claim_statement(), params).first()
    if row is not None:
        job_id, number, doc_path, plan_name, job_options, attempts, etag, sha256 = row
        work = PageWork(
            page_id, job_id, number, doc_path, plan_name, job_options or {}, etag, sha256
        )
        return ClaimedPage(work, int(attempts))
    held = conn.execute(select(Page.status, Page.lease_owner).where(Page.id == page_id)).first()
    if held is None:
        raise KeyError(f"no page {page_id}")
    return Refusal(PageStatus(held[0]), held[1])


def claim_many(
    conn: Connection, page_ids: Collection[int], owner: str, lease_s: float
) -> dict[int, ClaimedPage | Refusal]:
    """`claim` for several pages in one statement (a second one only when some are refused):
    each page id to its claim or its refusal; an id with no page row is left out."""
    now = datetime.now(UTC)
    until = now + timedelta(seconds=lease_s)
    params = {"page_ids": list(page_ids), "owner": owner, "now": now, "lease_until": until}
    found: dict[int, ClaimedPage | Refusal] = {}
    for row in conn.execute(_claim_statement(many=True), params):
        page_id, job_id, number, doc_path, plan_name, options, attempts, etag, sha256 = row
        work = PageWork(page_id, job_id, number, doc_path, plan_name, options or {}, etag, sha256)
        found[page_id] = ClaimedPage(work, int(attempts))
    refused = [p for p in page_ids if p not in found]
    if refused:
        query = select(Page.id, Page.status, Page.lease_owner).where(Page.id.in_(refused))
        for page_id, status, lease_owner in conn.execute(query):
            found[page_id] = Refusal(PageStatus(status), lease_owner)
    return found


@dataclass(frozen=True)
class Closed:
    """A page this call closed; `others_open`: other pages of its job were open as it closed.

    `others_open` sees the database as the statement started: a page closing at the same time
    in another transaction still counts as open (see `app.distributed.FinalizeSweeper`).
    """

    status: PageStatus
    others_open: bool


_CLOSE_COLUMNS: tuple[str, ...] = ("status", "text", "final_engine", "final_step", "error")
_CLOSE_COLUMNS += ("failure_category", "finished_at", "lease_owner", "lease_until")
_RENDER_COLUMNS = ("width", "height", "has_text_layer", "render_s")


@cache
def _close_statement(with_render_facts: bool) -> Any:
    """Built once per shape, with bound parameters (`v_<column>`; a bare column name is
    reserved for SET), so each close skips building and compiling it."""
    columns = _CLOSE_COLUMNS + (_RENDER_COLUMNS if with_render_facts else ())
    table = Page.__table__.c
    values = {c: bindparam(f"v_{c}", type_=table[c].type) for c in columns}
    own: dict[str, Any] = {c: literal_column(f"pages.{c}") for c in ("id", "job_id")}
    other = aliased(Page, name="other")
    others_open = exists(
        select(other.id).where(
            other.job_id == own["job_id"],
            other.id != own["id"],
            other.status.in_(_open_values()),
        )
    )
    return (
        update(Page)
        .where(Page.id == bindparam("page_id", type_=Page.id.type), is_open())
        .values(**values)
        .returning(Page.status, others_open)
    )


def close(conn: Connection, page_id: int, outcome: PageClose) -> Closed | None:
    """Write the terminal outcome; None when the page was terminal already (it keeps its own)."""
    values: dict[str, Any] = {
        "status": outcome.status,
        "text": outcome.text,
        "final_engine": outcome.engine,
        "final_step": outcome.step,
        "failure_category": outcome.failure_category,
        "error": outcome.error,
        "finished_at": datetime.now(UTC),
        "lease_owner": None,
        "lease_until": None,
    }
    if (facts := outcome.rendered) is not None:
        values.update(width=facts.size[0], height=facts.size[1])
        values.update(has_text_layer=facts.has_text_layer, render_s=facts.render_s)
    params = {f"v_{column}": value for column, value in values.items()}
    statement = _close_statement(outcome.rendered is not None)
    closed = conn.execute(statement, {"page_id": page_id, **params}).first()
    return Closed(PageStatus(closed[0]), bool(closed[1])) if closed else None


@cache
def _insert_attempt() -> Any:
    return insert(Attempt)


def record_attempt(conn: Connection, row: dict[str, Any]) -> None:
    """One attempt row (`attempts.attempt_row`) as a plain INSERT: no ORM unit of work."""
    conn.execute(_insert_attempt(), row)


def record_attempts(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Several attempt rows in one INSERT (SQLAlchemy's insertmanyvalues batches them)."""
    if rows:
        conn.execute(_insert_attempt(), rows)


def mark_false_alarms(conn: Connection, page_id: int, stops: Collection[tuple[str, int]]) -> None:
    """The page's plan-step attempts cut short by these verdicts (kind, onset), which its
    confirming attempt showed wrong: their status becomes false_alarm."""
    for kind, onset in set(stops):
        conn.execute(
            update(Attempt)
            .where(Attempt.page_id == page_id, Attempt.status == AttemptStatus.DEGENERATE)
            .where(Attempt.role.is_(None), Attempt.verdict_kind == kind)
            .where(Attempt.verdict_onset == onset)
            .values(status=AttemptStatus.FALSE_ALARM)
        )


def release(conn: Connection, page_ids: Collection[int], owner: str) -> int:
    """Hand back pages `owner` claimed but could not start (their document's store is down):
    pending again, with no lease, so any worker's retry takes them at once."""
    if not page_ids:
        return 0
    result = conn.execute(
        update(Page)
        .where(Page.id.in_(list(page_ids)), Page.lease_owner == owner)
        .where(Page.status == PageStatus.RUNNING)
        .values(status=PageStatus.PENDING, lease_owner=None, lease_until=None)
    )
    return int(result.rowcount)


def renew_leases(conn: Connection, owner: str, page_ids: Collection[int], lease_s: float) -> int:
    """Push back the lease of every page `owner` still holds among `page_ids`."""
    if not page_ids:
        return 0
    result = conn.execute(
        update(Page)
        .where(Page.id.in_(list(page_ids)), Page.lease_owner == owner)
        .where(Page.status == PageStatus.RUNNING)
        .values(lease_until=datetime.now(UTC) + timedelta(seconds=lease_s))
    )
    return int(result.rowcount)


def job_has_open_pages(conn: Connection, job_id: str) -> bool:
    """Whether any page of the job is still open (served by the open-pages partial index)."""
    query = select(Page.id).where(Page.job_id == job_id, is_open())
    return bool(conn.scalar(select(exists(query))))


def page_status(conn: Connection | Session, page_id: int) -> PageStatus:
    status = conn.scalar(select(Page.status).where(Page.id == page_id))
    if status is None:
        raise KeyError(f"no page {page_id}")
    return PageStatus(status)
