"""The page path's database traffic, lease heartbeats and batch finalisation, on SQLite and
PostgreSQL (PostgreSQL alone where two open transactions must run side by side)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, func, select

from app.db import page_path
from app.db.engine import Database
from app.db.models import Attempt, Job, Page
from app.db.page_path import PageClose
from app.distributed import FinalizeSweeper, job_to_finalize
from app.distributed.queue import Enqueuer
from app.domain import EngineResult, PageInput, PageStatus
from app.engines.registry import EngineSet
from app.engines.textlayer import TextLayerEngine
from app.jobs import JobRequest, create_job, release_dead_leases, worker_id
from app.pipeline.process_page import PageBusy, PageOutcome, PageProcessor
from app.settings import PlanStep, Settings
from tests.distributed_support import page_text, wait_until, write_text_pdfs


def make_job(db_url: str, folder: Path, pages: int, **extra: Any) -> tuple[Settings, list[int]]:
    write_text_pdfs(folder, documents=1, pages=pages)
    settings = Settings(database_url=db_url, engine="textlayer", dpi=36, **extra)
    request = JobRequest(folder, None, "textlayer")
    return settings, create_job(settings, Database(db_url), request).page_ids


@contextmanager
def counted(db: Database) -> Iterator[Counter[str]]:
    """Statements and COMMITs sent on `db`'s engine inside the block (SQLAlchemy events)."""
    counts: Counter[str] = Counter()

    def statement(*_: Any) -> None:
        counts["statements"] += 1

    def commit(_conn: Any) -> None:
        counts["commits"] += 1

    event.listen(db.engine, "before_cursor_execute", statement)
    event.listen(db.engine, "commit", commit)
    try:
        yield counts
    finally:
        event.remove(db.engine, "before_cursor_execute", statement)
        event.remove(db.engine, "commit", commit)


def test_a_page_costs_three_statements_and_one_commit(db_url: str, tmp_path: Path) -> None:
    settings, pages = make_job(db_url, tmp_path / "in", 3)
    db = Database(db_url)
    processor = PageProcessor(settings, db, EngineSet(settings), owner=worker_id())
    for page_id in pages:
        with counted(db) as counts:
            outcome = processor.run(page_id)
        assert outcome.status is PageStatus.SUCCEEDED and outcome.closed
        # The claim (returns the work), the attempt row, the close (returns the status).
        assert counts == {"statements": 3, "commits": 1}, counts
    assert outcome.others_open is False  # the last page says so: the job can be finalized
    with db.session() as session:
        assert session.scalar(select(func.count()).select_from(Attempt)) == 3
        rendered = session.scalars(select(Page.width).where(Page.id.in_(pages))).all()
    assert all(width for width in rendered)  # render facts are written with the status


def test_a_group_of_pages_costs_one_claim_and_one_commit(db_url: str, tmp_path: Path) -> None:
    settings, pages = make_job(db_url, tmp_path / "in", 8)
    db = Database(db_url)
    processor = PageProcessor(settings, db, EngineSet(settings), owner=worker_id())
    with counted(db) as counts:
        batch = processor.run_many(pages, crashed=never_crashes)
    assert batch.busy == [] and list(batch.outcomes) == pages
    assert {o.status for o in batch.outcomes.values()} == {PageStatus.SUCCEEDED}
    # One claim for all, one INSERT of the 8 attempt rows, a close per page, one COMMIT.
    assert counts == {"statements": 2 + len(pages), "commits": 1}, counts
    assert batch.outcomes[pages[-1]].others_open is False  # the job can be finalized
    with db.session() as session:
        attempts = session.scalars(select(Attempt.page_id).order_by(Attempt.page_id)).all()
        texts = session.scalars(select(Page.text).where(Page.id.in_(pages))).all()
    assert attempts == pages and all(texts)


def never_crashes(page_id: int, job_id: str, exc: Exception) -> PageOutcome:
    raise AssertionError(f"page {page_id} crashed: {exc!r}")


class CrashingTextLayer(TextLayerEngine):
    """The real text-layer engine, raising an unexpected error on one page."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        result = super().transcribe(page, step)
        if self.marker in result.text:
            raise RuntimeError("a bug in an engine")
        return result


class OneEngine(EngineSet):
    """Every step of the plan runs on the one engine given."""

    def __init__(self, settings: Settings, engine: TextLayerEngine) -> None:
        super().__init__(settings)
        self.engine = engine

    def for_step(self, step: PlanStep) -> TextLayerEngine:
        return self.engine


def test_a_group_passes_over_done_and_held_pages_and_outlives_a_crash(
    db_url: str, tmp_path: Path
) -> None:
    settings, pages = make_job(db_url, tmp_path / "in", 5)
    db = Database(db_url)
    plain = PageProcessor(settings, db, EngineSet(settings), owner="first:1")
    assert plain.run(pages[0]).status is PageStatus.SUCCEEDED  # done before the group
    with db.autocommit() as conn:  # another live worker holds the second page
        assert isinstance(page_path.claim(conn, pages[1], "other:2", 600), page_path.ClaimedPage)
    crash_on = page_text(1, 3).split(":")[0] + ":"  # the third page's own words
    processor = PageProcessor(
        settings, db, OneEngine(settings, CrashingTextLayer(crash_on)), owner="group:3"
    )
    crashes: list[int] = []

    def crashed(page_id: int, job_id: str, exc: Exception) -> PageOutcome:
        crashes.append(page_id)
        return PageOutcome(PageStatus.FAILED, job_id, closed=True)

    batch = processor.run_many(pages, crashed)
    assert batch.busy == [pages[1]]
    assert crashes == [pages[2]]
    statuses = {p: o.status for p, o in batch.outcomes.items()}
    assert statuses == {
        pages[0]: PageStatus.SUCCEEDED,  # terminal already: left as it was, not closed again
        pages[2]: PageStatus.FAILED,
        pages[3]: PageStatus.SUCCEEDED,
        pages[4]: PageStatus.SUCCEEDED,
    }
    assert not batch.outcomes[pages[0]].closed
    with db.session() as session:
        attempts = session.scalars(select(Attempt.page_id).order_by(Attempt.page_id)).all()
    assert attempts == [pages[0], pages[3], pages[4]]  # one per engine call that returned


class GatedTextLayer(TextLayerEngine):
    """The real text-layer engine, held until the test opens the gate."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.gate = threading.Event()

    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        self.started.set()
        assert self.gate.wait(60)
        return super().transcribe(page, step)


def lease_until(db: Database, page_id: int) -> datetime:
    with db.session() as session:
        until = session.scalar(select(Page.lease_until).where(Page.id == page_id))
    assert until is not None
    return until


def test_the_heartbeat_keeps_a_slow_page_from_a_second_worker(db_url: str, tmp_path: Path) -> None:
    # A 6 s lease renewed every 2 s: the page stays held through a 4 s stall of the heartbeat
    # thread on a loaded machine, and the test waits on the lease itself, not on a sleep.
    lease = timedelta(seconds=6)
    settings, pages = make_job(db_url, tmp_path / "in", 1, page_lease_s=lease.total_seconds())
    db = Database(db_url)
    engine = GatedTextLayer()
    holder = PageProcessor(settings, db, OneEngine(settings, engine), owner="holder:1")
    other = PageProcessor(settings, db, EngineSet(settings), owner="other:2")
    outcome: list[PageOutcome] = []
    thread = threading.Thread(target=lambda: outcome.append(holder.run(pages[0])))
    thread.start()
    try:
        assert engine.started.wait(30)
        first = lease_until(db, pages[0])

        def renewed_past_the_first() -> bool:  # without renewals the page would be free now
            return lease_until(db, pages[0]) > first + lease

        wait_until(renewed_past_the_first, 60, "a lease renewed past the first one's end")
        with pytest.raises(PageBusy):
            other.run(pages[0])
    finally:
        engine.gate.set()
        thread.join(30)
        holder.close()
    assert outcome and outcome[0].status is PageStatus.SUCCEEDED
    with db.session() as session:
        assert session.scalar(select(func.count()).select_from(Attempt)) == 1


def test_a_dead_local_process_frees_its_pages_at_once(db_url: str, tmp_path: Path) -> None:
    _, pages = make_job(db_url, tmp_path / "in", 3)
    db = Database(db_url)
    gone = subprocess_pid_that_ended()
    host = socket.gethostname()
    owners = [f"{host}:{gone}", f"{host}:{os.getppid()}", "another-host:1"]
    with db.autocommit() as conn:
        for page_id, owner in zip(pages, owners, strict=True):
            assert isinstance(page_path.claim(conn, page_id, owner, 600), page_path.ClaimedPage)
    with db.session() as session:
        job_id = session.scalars(select(Job.id)).one()
    assert release_dead_leases(db, job_id) == 1
    with db.session() as session:
        statuses = [page_path.page_status(session, p) for p in pages]
    assert statuses == [PageStatus.PENDING, PageStatus.RUNNING, PageStatus.RUNNING]


def subprocess_pid_that_ended() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


class RecordingEnqueuer(Enqueuer):
    """The real Enqueuer's interface, recording finalize messages instead of sending them."""

    def __init__(self) -> None:
        self.finalized: list[str] = []

    def finalize_job(self, job_id: str) -> None:
        self.finalized.append(job_id)


@pytest.mark.postgres
def test_the_last_two_pages_closing_together_still_finalize_the_job(
    postgres_url: str, tmp_path: Path
) -> None:
    _, pages = make_job(postgres_url, tmp_path / "in", 2)
    db = Database(postgres_url)
    with db.autocommit() as conn:
        for page_id in pages:
            page_path.claim(conn, page_id, "w:1", 600)
    done = PageClose(PageStatus.SUCCEEDED, text="x")
    # Both closes run before either commits: each sees the other page still open.
    with db.transaction() as first, db.transaction() as second:
        closed = [page_path.close(first, pages[0], done), page_path.close(second, pages[1], done)]
    assert all(c is not None and c.others_open for c in closed)
    outcomes = [PageOutcome(PageStatus.SUCCEEDED, job_id(db), True, True) for _ in closed]
    assert [job_to_finalize(o) for o in outcomes] == [None, None]
    enqueuer = RecordingEnqueuer()
    sweeper = FinalizeSweeper(db, enqueuer)
    for outcome in outcomes:
        sweeper.note(str(outcome.job_id))
    sweeper.close()  # its last sweep
    assert enqueuer.finalized == [job_id(db)]


def job_id(db: Database) -> str:
    with db.session() as session:
        return str(session.scalars(select(Job.id)).one())
