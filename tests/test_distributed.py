"""Distributed mode against the real PostgreSQL and Redis, with real `folio worker` processes."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.db.jobs import set_job_status
from app.db.models import Attempt, Document, Job, Page
from app.distributed import queue_job, recover
from app.distributed.lost_tasks import LostTaskSweeper
from app.distributed.queue import PROCESS_PAGE, PROCESS_PAGES, Enqueuer
from app.distributed.queue_view import QueueView, task_ids
from app.domain import JobStatus
from app.jobs import JobRequest, create_job, run_job_locally
from app.settings import Settings
from tests.conftest import REDIS_URL
from tests.distributed_support import (
    TcpProxy,
    page_text,
    start_gated_worker,
    start_worker,
    stop_worker,
    wait_until,
    worker_env,
    write_text_pdfs,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
# Short enough that a dead worker's tasks come back within seconds.
FAST_REDELIVERY = {
    "FOLIO_VISIBILITY_TIMEOUT_S": "4",
    "FOLIO_PAGE_LEASE_S": "3",
    "FOLIO_LOST_TASK_CHECK_S": "1",
}


@pytest.fixture
def pg_url(postgres_url: str) -> str:
    """A database of our own (cloned from the session's template): workers write to it."""
    return postgres_url


class Batch:
    """A submitted job and what the database says about it."""

    def __init__(self, db_url: str, job_id: str, pages: int) -> None:
        self.db = Database(db_url)
        self.job_id = job_id
        self.pages = pages

    def count(self, *statuses: str) -> int:
        with self.db.session() as session:
            query = select(func.count()).where(Page.job_id == self.job_id)
            return int(session.scalar(query.where(Page.status.in_(statuses))) or 0)

    def done(self) -> bool:
        with self.db.session() as session:
            return session.scalar(select(Job.status).where(Job.id == self.job_id)) == "done"

    def describe(self) -> str:
        with self.db.session() as session:
            rows = session.execute(
                select(Page.status, func.count())
                .where(Page.job_id == self.job_id)
                .group_by(Page.status)
            )
            return str(dict(rows.tuples().all()))

    def assert_every_page_done_once(self) -> None:
        with self.db.session() as session:
            rows = session.execute(
                select(Page.status, Page.text, Page.number, Document.name)
                .join(Document)
                .where(Page.job_id == self.job_id)
            ).all()
            attempts = session.execute(
                select(func.count(), func.count(func.distinct(Attempt.page_id))).where(
                    Attempt.job_id == self.job_id
                )
            ).one()
            documents = set(session.scalars(select(Document.status)))
        assert len(rows) == self.pages
        assert {r.status for r in rows} == {"succeeded"}
        for row in rows:
            assert row.text.strip() == page_text(int(row.name.removeprefix("doc")), row.number)
        assert tuple(attempts) == (self.pages, self.pages), "attempt rows duplicated or missing"
        assert documents == {"done"}


def submit(folder: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    for key, value in env.items():
        if key.startswith("FOLIO_"):
            monkeypatch.setenv(key, value)
    result = CliRunner().invoke(app, ["submit", str(folder)])
    assert result.exit_code == 0, result.output
    return result.stdout.strip().splitlines()[-1]


def test_kill_9_of_a_worker_mid_batch_loses_nothing_and_repeats_nothing(
    pg_url: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = write_text_pdfs(tmp_path / "in", documents=5, pages=44)
    env = worker_env(pg_url, REDIS_URL, prefix, **FAST_REDELIVERY)
    # The victim does 10 pages, then holds the rest it takes in flight until it is killed: the
    # kill meets pages mid-way on any machine, never a batch that ended first.
    gate = tmp_path / "victim-at-gate"
    victim = start_gated_worker(env, 10, gate, concurrency=4, log=tmp_path / "victim.log")
    survivor = start_worker(env, concurrency=4, log=tmp_path / "survivor.log")
    try:
        batch = Batch(pg_url, submit(tmp_path / "in", env, monkeypatch), pages)
        wait_until(gate.exists, 120, "the victim holding pages in flight")
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        assert batch.count("pending", "running") > 0, "the victim's pages are still open"
        # A task the victim had taken off Redis but not yet recorded as unacked dies with it
        # (about one run in four): the lost-task check queues its page again once the queues
        # are drained; no `folio recover`.
        wait_until(batch.done, 120, "the job to finish after the kill", batch.describe)
    finally:
        stop_worker(victim)
        stop_worker(survivor)
    batch.assert_every_page_done_once()


def test_recover_requeues_pages_after_redis_lost_the_queue(
    pg_url: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = write_text_pdfs(tmp_path / "in", documents=2, pages=30)
    env = worker_env(pg_url, REDIS_URL, prefix)
    batch = Batch(pg_url, submit(tmp_path / "in", env, monkeypatch), pages)
    # 10 pages through, then the worker holds its pages at a gate while Redis loses the
    # queue: tasks are certainly still queued then, on any machine (it prefetches one).
    gate, release = tmp_path / "at-gate", tmp_path / "release"
    worker = start_gated_worker(env, 10, gate, 2, tmp_path / "worker.log", release=release)
    try:
        wait_until(gate.exists, 120, "10 pages done and the next at the gate")
        client = redis.Redis.from_url(REDIS_URL)
        # Every queue list, at every priority level (`<queue>:<level>`).
        lists = [
            *client.scan_iter(f"{prefix}:{prefix}.cpu*"),
            *client.scan_iter(f"{prefix}:{prefix}.gpu*"),
        ]
        assert lists
        client.delete(*lists)
        release.touch()
        wait_until(lambda: batch.count("running") == 0, 60, "in-flight pages to finish")
        time.sleep(1.0)  # anything still queued would start now; nothing is
        stranded = batch.count("pending")
        assert stranded > 0, "the batch ended before the queue was lost"
        assert not batch.done()
        result = CliRunner().invoke(app, ["recover", batch.job_id])
        assert result.exit_code == 0, result.output
        assert str(stranded) in result.stdout
        wait_until(batch.done, 120, "the job to finish after recover")
    finally:
        stop_worker(worker)
    batch.assert_every_page_done_once()


def test_postgres_outage_makes_tasks_retry_not_fail(
    pg_url: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = write_text_pdfs(tmp_path / "in", documents=2, pages=20)
    target = make_url(pg_url)
    proxy = TcpProxy((target.host or "127.0.0.1", target.port or 5432))
    proxy.start()
    proxied = target.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    env = worker_env(proxied, REDIS_URL, prefix, FOLIO_DB_RETRY_MAX_DELAY_S="1")
    log = tmp_path / "worker.log"
    worker: subprocess.Popen[bytes] | None = None
    try:
        batch = Batch(
            pg_url,
            submit(tmp_path / "in", {**env, "FOLIO_DATABASE_URL": pg_url}, monkeypatch),
            pages,
        )
        # 10 pages through, then the worker holds its pages at a gate until the database is
        # gone: they end during the outage on any machine, never before it.
        gate, release = tmp_path / "at-gate", tmp_path / "release"
        worker = start_gated_worker(env, 10, gate, 2, log, release=release)
        wait_until(gate.exists, 120, "10 pages done and the next at the gate")
        proxy.pause()
        release.touch()
        time.sleep(3.0)  # the outage
        assert batch.count("pending", "running") > 0, "pages are open through the outage"
        proxy.start()
        wait_until(batch.done, 120, "the job to finish after the outage")
    finally:
        if worker:
            stop_worker(worker)
        proxy.pause()
    assert batch.count("failed") == 0
    assert "database unreachable" in log.read_text(errors="replace")
    batch.assert_every_page_done_once()


def test_api_jobs_go_to_celery_workers_when_a_broker_is_set(
    pg_url: str, prefix: str, tmp_path: Path
) -> None:
    from app.api.runner import CeleryJobRunner, make_runner
    from tests.api_server import running_api, wait_for_job

    settings = textlayer_settings(pg_url, prefix, upload_dir=tmp_path / "uploads")
    write_text_pdfs(tmp_path / "in", documents=2, pages=3)
    files = [
        ("files", (pdf.name, pdf.read_bytes(), "application/pdf"))
        for pdf in sorted((tmp_path / "in").glob("*.pdf"))
    ]
    assert isinstance(make_runner(settings, Database(pg_url)), CeleryJobRunner)
    queued = redis.Redis.from_url(REDIS_URL)
    with running_api(settings) as api, api.client(api.key("k")) as client:
        answer = client.post("/v1/jobs", files=files)
        assert answer.status_code == 202, answer.text
        # Before any worker runs, the job waits in the broker: one split task per document.
        assert queued.llen(last_level(prefix)) == 2
        worker = start_worker(worker_env(pg_url, REDIS_URL, prefix), log=tmp_path / "w.log")
        try:
            job = wait_for_job(client, answer.json()["id"])
        finally:
            stop_worker(worker)
            queued.close()

    assert job["status"] == "done", job
    with Database(pg_url).session() as session:
        pages = session.execute(select(Page.status, Page.text)).all()
    assert len(pages) == 6 and all(status == "succeeded" for status, _ in pages)
    assert all(text for _, text in pages)


def test_higher_priority_jobs_are_worked_first(
    pg_url: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = textlayer_settings(pg_url, prefix)
    db = Database(pg_url)
    enqueuer = Enqueuer(settings)
    jobs = {}
    for priority in (0, 7):  # the low one is queued first
        folder = tmp_path / f"p{priority}"
        write_text_pdfs(folder, documents=2, pages=4)
        job_id = create_job(settings, db, JobRequest(folder, None, "textlayer")).job_id
        with db.session() as session:
            session.get_one(Job, job_id).options = {"priority": priority}  # as the API sets it
        jobs[priority] = job_id
        queue_job(db, enqueuer, job_id)
    worker = start_worker(worker_env(pg_url, REDIS_URL, prefix), concurrency=1)
    try:
        batch = Batch(pg_url, jobs[0], 8)
        wait_until(batch.done, 120, "the low-priority job to finish")
    finally:
        stop_worker(worker)
    with db.session() as session:
        spans = {
            p: session.execute(
                select(func.min(Page.started_at), func.max(Page.finished_at)).where(
                    Page.job_id == job_id
                )
            ).one()
            for p, job_id in jobs.items()
        }
    # One worker thread: all of the urgent job's pages ran before any of the other's.
    assert spans[7][1] <= spans[0][0], spans


def queue_pages_without_split(settings: Settings, folder: Path) -> tuple[Database, str]:
    """A running job whose page tasks wait in Redis (no worker has run yet)."""
    db = Database(settings.database_url)
    job_id = create_job(settings, db, JobRequest(folder, None, "textlayer")).job_id
    with db.session() as session:
        set_job_status(session, job_id, JobStatus.RUNNING)
    recover(db, Enqueuer(settings), job_id)
    return db, job_id


def textlayer_settings(pg_url: str, prefix: str, **extra: Any) -> Settings:
    """Settings of a distributed test: Postgres, the test's Redis queues, the text layer."""
    return Settings(
        database_url=pg_url, broker_url=REDIS_URL, queue_prefix=prefix, engine="textlayer", **extra
    )


def last_level(prefix: str) -> str:
    """The Redis list of the CPU queue's priority 0 (the last level), where these tests' tasks
    wait."""
    return f"{prefix}:{prefix}.cpu:9"


def page_ids_of(raw: bytes | str) -> list[int]:
    """The page ids a queued task message carries (a group of the CPU queue's pages)."""
    task, ids = task_ids(json.loads(raw))
    assert task == PROCESS_PAGES
    return ids


def take_one_page_task(client: redis.Redis, prefix: str) -> list[int]:
    """RPOP one page task, as a worker's BRPOP does; the worker "dies" before recording it
    as unacked, so the message is now in no list and in no unacked hash."""
    raw = client.rpop(last_level(prefix))
    assert raw is not None
    return page_ids_of(raw)


def test_a_page_task_lost_with_a_killed_worker_is_queued_again(
    pg_url: str, prefix: str, tmp_path: Path
) -> None:
    pages = write_text_pdfs(tmp_path / "in", documents=2, pages=10)
    settings = textlayer_settings(pg_url, prefix)
    _, job_id = queue_pages_without_split(settings, tmp_path / "in")
    lost_pages = take_one_page_task(redis.Redis.from_url(REDIS_URL), prefix)
    assert len(lost_pages) > 1  # 20 pages in groups: the task carried several
    log = tmp_path / "worker.log"
    worker = start_worker(
        worker_env(pg_url, REDIS_URL, prefix, FOLIO_LOST_TASK_CHECK_S="1"), log=log
    )
    batch = Batch(pg_url, job_id, pages)
    try:
        # Without the lost-task check the lost page stays `pending` and this gives up.
        wait_until(batch.done, 120, "the job to finish without recover", batch.describe)
    finally:
        stop_worker(worker)
    expected = f"queued again {len(lost_pages)} page(s) of job {job_id}"
    assert expected in log.read_text(errors="replace")
    batch.assert_every_page_done_once()
    with batch.db.session() as session:
        lost = select(Page.status).where(Page.id.in_(lost_pages))
        assert set(session.scalars(lost)) == {"succeeded"}


def test_the_lost_task_check_spares_queued_and_unacked_tasks(
    pg_url: str, prefix: str, tmp_path: Path
) -> None:
    write_text_pdfs(tmp_path / "in", documents=1, pages=3)
    settings = textlayer_settings(pg_url, prefix)
    db, _ = queue_pages_without_split(settings, tmp_path / "in")
    client = redis.Redis.from_url(REDIS_URL)
    sweeper = LostTaskSweeper(db, Enqueuer(settings), QueueView(settings), interval_s=0.01)

    def check() -> list[int]:
        time.sleep(0.05)  # past the previous check's lead
        return sweeper.check()

    assert check() == [] and check() == []  # every task still queued
    # A live worker has taken all three; it recorded two as unacked and is reading the third.
    raw = [client.rpop(last_level(prefix)) for _ in range(3)]
    assert not client.rpop(last_level(prefix))
    in_flight = [json.loads(m) for m in raw[:2] if m]
    for n, message in enumerate(in_flight):
        client.hset(f"{prefix}:unacked", f"tag{n}", json.dumps([message, "", "x"]))
    reading = page_ids_of(raw[2] or "")  # 3 pages, 3 groups of one
    assert check() == []  # seen once: it may still be in a live worker's socket
    assert check() == reading  # seen twice: lost, queued again
    assert client.llen(last_level(prefix)) == 1
    sweeper.close()


def test_the_lost_task_check_leaves_a_local_run_on_the_same_database_alone(
    pg_url: str, prefix: str, tmp_path: Path
) -> None:
    pages = write_text_pdfs(tmp_path / "in", documents=1, pages=4)
    settings = textlayer_settings(pg_url, prefix)
    db = Database(pg_url)
    ingested = create_job(settings, db, JobRequest(tmp_path / "in", None, "textlayer"))
    first, rest = ingested.page_ids[:1], ingested.page_ids[1:]
    # A `folio run` one page into its job (or killed there): running, three pages open, unleased.
    run_job_locally(settings, db, ingested.job_id, first)
    sweeper = LostTaskSweeper(db, Enqueuer(settings), QueueView(settings), interval_s=0.01)
    for _ in range(3):
        time.sleep(0.05)  # past the previous check's lead
        assert sweeper.check() == [], "pages of a local run were sent to Celery"
    sweeper.close()
    client = redis.Redis.from_url(REDIS_URL)
    assert [client.llen(q) for q in client.scan_iter(f"{prefix}:{prefix}.*")] in ([], [0])
    run_job_locally(settings, db, ingested.job_id, rest)  # the run goes on, or is run again
    batch = Batch(pg_url, ingested.job_id, pages)
    assert batch.done()
    batch.assert_every_page_done_once()


def test_cpu_pages_go_in_groups_and_vlm_pages_one_per_task(prefix: str) -> None:
    settings = Settings(broker_url=REDIS_URL, queue_prefix=prefix, pages_per_task=8)
    client = redis.Redis.from_url(REDIS_URL)
    enqueuer = Enqueuer(settings)
    assert enqueuer.process_pages(range(1, 101), "textlayer") == 100
    assert enqueuer.process_pages(range(201, 211), "vlm") == 10
    cpu = [task_ids(json.loads(m)) for m in client.lrange(last_level(prefix), 0, -1)]
    gpu = [task_ids(json.loads(m)) for m in client.lrange(f"{prefix}:{prefix}.gpu:9", 0, -1)]
    assert {task for task, _ in cpu} == {PROCESS_PAGES}
    assert sorted(p for _, ids in cpu for p in ids) == list(range(1, 101))
    assert max(len(ids) for _, ids in cpu) == 8
    assert gpu and {task for task, _ in gpu} == {PROCESS_PAGE}
    assert sorted(p for _, ids in gpu for p in ids) == list(range(201, 211))


def test_recover_without_a_job_leaves_a_local_run_alone(
    pg_url: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_text_pdfs(tmp_path / "local", documents=1, pages=4)
    write_text_pdfs(tmp_path / "celery", documents=1, pages=3)
    settings = textlayer_settings(pg_url, prefix)
    db = Database(pg_url)
    request = JobRequest(tmp_path / "local", None, "textlayer")
    local = create_job(settings, db, request)
    run_job_locally(settings, db, local.job_id, local.page_ids[:1])  # a `folio run`, one page in
    _, celery_job = queue_pages_without_split(settings, tmp_path / "celery")
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(last_level(prefix))  # the broker lost the Celery job's tasks

    for key, value in worker_env(pg_url, REDIS_URL, prefix).items():
        if key.startswith("FOLIO_"):
            monkeypatch.setenv(key, value)
    result = CliRunner().invoke(app, ["recover"])

    assert result.exit_code == 0, result.output
    assert "Left alone: 1 open job" in result.output
    queued = [p for m in client.lrange(last_level(prefix), 0, -1) for p in page_ids_of(m)]
    with db.session() as session:
        celery_pages = set(session.scalars(select(Page.id).where(Page.job_id == celery_job)))
        executor = session.scalar(select(Job.options).where(Job.id == local.job_id))["executor"]
    assert set(queued) == celery_pages
    assert executor == "local"
