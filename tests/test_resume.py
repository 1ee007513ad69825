"""Restart without loss on the embedded default: a killed `folio run` or `folio serve` process
leaves its job open, and the next start finishes that same job, each page done once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from app.cli.main import app
from app.db import keys
from app.db.engine import Database
from app.db.models import Attempt, Job, Page
from tests.api_server import free_port
from tests.distributed_support import ROOT, wait_until, write_text_pdfs

pytestmark = pytest.mark.slow
FOLIO = str(Path(sys.executable).parent / "folio")


def folio_env(db_url: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
    env.update(
        FOLIO_DATABASE_URL=db_url,
        FOLIO_ENGINE="textlayer",
        FOLIO_CONCURRENCY="1",
        FOLIO_UPLOAD_DIR=str(tmp_path / "uploads"),
        FOLIO_CONFIG=str(tmp_path / "absent-folio.toml"),
    )
    return env


def count(db: Database, *statuses: str) -> int:
    with db.session() as session:
        query = select(func.count()).select_from(Page).where(Page.status.in_(statuses))
        return int(session.scalar(query) or 0)


def assert_one_job_every_page_done_once(db: Database, pages: int) -> str:
    with db.session() as session:
        jobs = session.execute(select(Job.id, Job.status)).all()
        attempts = session.execute(
            select(func.count(), func.count(func.distinct(Attempt.page_id)))
        ).one()
    assert len(jobs) == 1 and jobs[0].status == "done", jobs
    assert count(db, "succeeded") == pages
    assert tuple(attempts) == (pages, pages), "a page was done twice, or not at all"
    return str(jobs[0].id)


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_folio_run_interrupted_is_finished_by_the_same_command(
    db_url: str, tmp_path: Path, stop: signal.Signals
) -> None:
    pages = write_text_pdfs(tmp_path / "in", documents=4, pages=40)
    args = ["run", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--dpi", "36"]
    env = folio_env(db_url, tmp_path)
    db = Database(db_url)
    gate = tmp_path / "gate-reached"
    gated = {**env, "FOLIO_TEST_GATE_AFTER": "5", "FOLIO_TEST_GATE_FILE": str(gate)}
    first = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "gated_run.py"), *args],
        env=gated,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # The sixth page waits at the gate until the signal: the run is interrupted mid-job on
        # any machine, however fast the other pages go.
        wait_until(gate.exists, 120, "5 pages done and the sixth at the gate")
        first.send_signal(stop)
        _, stderr = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert count(db, "succeeded") == 5
    assert count(db, "pending", "running") == pages - 5
    if stop is signal.SIGINT:
        assert first.returncode == 130
        assert b"run the same command again" in b" ".join(stderr.split())
    for key, value in env.items():
        if key.startswith("FOLIO_"):
            os.environ[key] = value  # CliRunner runs in this process; conftest restores them
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "Resuming job" in again.output
    job_id = assert_one_job_every_page_done_once(db, pages)
    assert job_id in again.output
    assert len(list((tmp_path / "out").glob("*.md"))) == 4


@contextmanager
def serving(
    env: dict[str, str], port: int, log: Path, folio: tuple[str, ...] = (FOLIO,)
) -> Iterator[subprocess.Popen[bytes]]:
    out = log.open("ab")
    server = subprocess.Popen(
        [*folio, "serve", "--port", str(port)], env=env, cwd=ROOT, stdout=out, stderr=out
    )

    def up() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(up, 60, "the API server to start")
        yield server
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def test_folio_serve_killed_mid_job_resumes_it_on_the_next_start(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = write_text_pdfs(tmp_path / "in", documents=4, pages=40)
    env = folio_env(db_url, tmp_path)
    db = Database(db_url)
    with db.session() as session:
        token = keys.create_key(session, "restart")[1]
    headers = {"Authorization": f"Bearer {token}"}
    files = [
        ("files", (p.name, p.read_bytes(), "application/pdf"))
        for p in sorted((tmp_path / "in").glob("*.pdf"))
    ]
    port = free_port()
    gate = tmp_path / "gate-reached"
    gated = {**env, "FOLIO_TEST_GATE_AFTER": "5", "FOLIO_TEST_GATE_FILE": str(gate)}
    gated_folio = (sys.executable, str(ROOT / "tests" / "gated_run.py"))
    with serving(gated, port, tmp_path / "serve.log", gated_folio) as server:
        answer = httpx.post(f"http://127.0.0.1:{port}/v1/jobs", files=files, headers=headers)
        assert answer.status_code == 202, answer.text
        job_id = answer.json()["id"]
        wait_until(gate.exists, 120, "5 pages done and the sixth at the gate")
        server.send_signal(signal.SIGKILL)
        server.wait()
    with db.session() as session:
        assert session.get_one(Job, job_id).status == "running"
    done_before = count(db, "succeeded")
    assert done_before == 5 and count(db, "pending", "running") == pages - 5
    with serving(env, port, tmp_path / "serve.log"):

        def finished() -> bool:
            job = httpx.get(f"http://127.0.0.1:{port}/v1/jobs/{job_id}", headers=headers).json()
            return bool(job["status"] == "done")

        wait_until(finished, 120, "the resumed job")
    assert assert_one_job_every_page_done_once(db, pages) == job_id
    assert done_before < pages
