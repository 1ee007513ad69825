"""Redelivered page tasks: terminal pages stay as they are, recorded answers are not recomputed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app
from app.db import page_path
from app.db.attempts import attempt_row
from app.db.engine import Database
from app.db.models import Attempt, Page
from app.domain import AttemptStatus, EngineResult, PageStatus
from app.engines.registry import EngineSet
from app.jobs import JobRequest, create_job, worker_id
from app.pipeline.process_page import PageBusy, PageProcessor
from app.settings import Settings
from tests.distributed_support import page_text, write_text_pdfs


@pytest.fixture
def job(sqlite_url: str, tmp_path: Path) -> tuple[Settings, Database, list[int]]:
    write_text_pdfs(tmp_path / "in", documents=1, pages=3)
    settings = Settings(database_url=sqlite_url, engine="textlayer", dpi=36)
    db = Database(sqlite_url)
    ingested = create_job(settings, db, JobRequest(tmp_path / "in", None, "textlayer"))
    return settings, db, ingested.page_ids


def attempts(db: Database, page_id: int) -> int:
    with db.session() as session:
        return int(session.scalar(select(func.count()).where(Attempt.page_id == page_id)) or 0)


def test_a_redelivered_terminal_page_is_left_alone(
    job: tuple[Settings, Database, list[int]],
) -> None:
    settings, db, pages = job
    processor = PageProcessor(settings, db, EngineSet(settings), owner=worker_id())
    assert processor.process(pages[0]) is PageStatus.SUCCEEDED
    assert processor.process(pages[0]) is PageStatus.SUCCEEDED
    assert attempts(db, pages[0]) == 1


def test_a_recorded_answer_is_closed_without_running_engines_again(
    job: tuple[Settings, Database, list[int]],
) -> None:
    settings, db, pages = job
    page_id = pages[1]
    with db.session() as session:  # a worker recorded the answer, then died before closing
        claimed = page_path.claim(session.connection(), page_id, "dead-worker", lease_s=-1)
        assert isinstance(claimed, page_path.ClaimedPage)
        work = claimed.work
        now = datetime.now(UTC)
        result = EngineResult(
            text="recorded", status=AttemptStatus.OK, started_at=now, ended_at=now
        )
        row = attempt_row(work, 0, settings.plan("textlayer")[0], result)
        page_path.record_attempt(session.connection(), row)
    processor = PageProcessor(settings, db, EngineSet(settings), owner=worker_id())
    assert processor.process(page_id) is PageStatus.SUCCEEDED
    assert attempts(db, page_id) == 1
    with db.session() as session:
        page = session.get_one(Page, page_id)
        assert (page.text, page.final_step) == ("recorded", "textlayer")


def test_a_page_held_by_a_live_worker_is_not_taken(
    job: tuple[Settings, Database, list[int]],
) -> None:
    settings, db, pages = job
    with db.session() as session:
        claimed = page_path.claim(session.connection(), pages[2], "other-worker", lease_s=600)
        assert isinstance(claimed, page_path.ClaimedPage)
    processor = PageProcessor(settings, db, EngineSet(settings), owner=worker_id())
    with pytest.raises(PageBusy):
        processor.process(pages[2])
    with db.session() as session:  # the lease ran out: the page is free again
        session.execute(update(Page).where(Page.id == pages[2]).values(lease_until=None))
    assert processor.process(pages[2]) is PageStatus.SUCCEEDED
    with db.session() as session:
        assert session.get_one(Page, pages[2]).text == page_text(1, 3)


def test_submit_exits_7_when_the_broker_is_down(tmp_path: Path, sqlite_url: str) -> None:
    write_text_pdfs(tmp_path / "in", documents=1, pages=1)
    args = ["submit", str(tmp_path / "in"), "--database-url", sqlite_url]
    args += ["--broker-url", "redis://127.0.0.1:1/0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == exit_codes.BROKER_DOWN
    assert "Broker unreachable" in result.output
