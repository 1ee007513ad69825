"""Lease heartbeats with real `folio worker` processes on PostgreSQL and Redis: a page slower
than `page_lease_s` is done once, and a worker killed mid-page is taken over one lease after
its last heartbeat."""

from __future__ import annotations

import signal
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.db.engine import Database
from app.db.models import Attempt, Page
from tests.conftest import REDIS_URL
from tests.distributed_support import (
    page_text,
    start_slow_worker,
    start_worker,
    stop_worker,
    wait_until,
    worker_env,
    write_text_pdfs,
)
from tests.test_distributed import Batch, pg_url, submit

__all__ = ["pg_url"]  # fixtures shared with the other distributed tests
pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
LEASE = {"FOLIO_PAGE_LEASE_S": "1.5", "FOLIO_VISIBILITY_TIMEOUT_S": "2"}


def lease_of(db: Database, page_id: int) -> tuple[str | None, datetime | None]:
    with db.session() as session:
        row = session.execute(
            select(Page.lease_owner, Page.lease_until).where(Page.id == page_id)
        ).one()
    return row[0], row[1]


def test_a_page_slower_than_its_lease_is_done_once(
    pg_url: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each page takes 4 leases. Redis hands the unacknowledged tasks out again after 2 s, to
    # the other worker or to a free thread of the same one: the heartbeats keep them off.
    pages = write_text_pdfs(tmp_path / "in", documents=1, pages=2)
    env = worker_env(pg_url, REDIS_URL, prefix, **LEASE)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    workers = [start_slow_worker(env, 6.0, 4, log) for log in logs]
    try:
        batch = Batch(pg_url, submit(tmp_path / "in", env, monkeypatch), pages)
        wait_until(batch.done, 120, "the slow job", batch.describe)
    finally:
        for worker in workers:
            stop_worker(worker)
    batch.assert_every_page_done_once()
    busy = sum(log.read_text(errors="replace").count("PageBusy") for log in logs)
    assert busy > 0, "no task was handed out twice: the test did not test the lease"


def test_a_worker_killed_mid_page_is_taken_over_after_one_lease(
    pg_url: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_text_pdfs(tmp_path / "in", documents=1, pages=1)
    env = worker_env(pg_url, REDIS_URL, prefix, **LEASE)
    victim = start_slow_worker(env, 30.0, 1, tmp_path / "victim.log")
    survivor: subprocess.Popen[bytes] | None = None
    try:
        batch = Batch(pg_url, submit(tmp_path / "in", env, monkeypatch), 1)
        with batch.db.session() as session:
            page_id = session.scalars(select(Page.id).where(Page.job_id == batch.job_id)).one()
        wait_until(lambda: lease_of(batch.db, page_id)[1] is not None, 60, "the page's claim")
        first = lease_of(batch.db, page_id)[1]
        assert first is not None
        wait_until(lambda: (lease_of(batch.db, page_id)[1] or first) > first, 30, "a heartbeat")
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        owner, last = lease_of(batch.db, page_id)
        assert owner is not None and last is not None
        survivor = start_worker(env, concurrency=2, log=tmp_path / "survivor.log")
        wait_until(batch.done, 90, "the job after the kill", batch.describe)
    finally:
        stop_worker(victim)
        if survivor:
            stop_worker(survivor)
    with batch.db.session() as session:
        page = session.get_one(Page, page_id)
        attempts = session.scalars(select(Attempt).where(Attempt.page_id == page_id)).all()
        assert session.scalar(select(func.count()).select_from(Attempt)) == 1
    assert page.status == "succeeded" and page.text == page_text(1, 1)
    # The survivor's only engine call began once the dead worker's last lease had run out.
    assert len(attempts) == 1 and attempts[0].started_at >= last
