"""The upload folder with real files in temporary folders, including restarts mid-batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from app.cli.main import app as cli
from app.db import page_path
from app.db.engine import Database
from app.db.models import Job, Page
from app.db.pages import open_pages
from app.jobs import run_job_locally
from app.jobs.inbox_files import INCOMPLETE_LOOKS, StableFiles, move_to
from app.jobs.watch import Watcher, inbox_lock
from app.pdf.samples import born_digital_pdf, page_text
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def pdf(pages: int, seed: int = 0) -> bytes:
    return born_digital_pdf([page_text(seed + n) for n in range(pages)])


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_watcher(db_url: str, tmp_path: Path, clock: Clock | None = None) -> Watcher:
    settings = Settings(database_url=db_url, engine="textlayer", concurrency=1, watch_window_s=5)
    inbox = tmp_path / "inbox"
    inbox.mkdir(exist_ok=True)
    return Watcher(settings, Database(db_url), inbox, tmp_path / "outbox", clock or Clock())


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def job_count(db_url: str) -> int:
    with Database(db_url).session() as session:
        return int(session.scalar(select(func.count()).select_from(Job)) or 0)


def test_a_file_is_taken_only_once_it_stops_growing(tmp_path: Path) -> None:
    stable, path = StableFiles(), tmp_path / "a.pdf"
    whole = pdf(2)
    path.write_bytes(whole[:300])
    assert stable.look([path]) == []
    with path.open("ab") as handle:
        handle.write(whole[300:])
    assert stable.look([path]) == []
    assert stable.look([path]) == [path]


def test_a_pdf_whose_writer_pauses_is_not_taken_half_written(tmp_path: Path) -> None:
    """A copy that stops mid-way for a few looks: the file begins as a PDF and has no
    `%%EOF` yet, so it must hold still for INCOMPLETE_LOOKS looks; one cut short for good is
    taken then, and fails or keeps what can be repaired."""
    stable, path, other = StableFiles(), tmp_path / "scan.pdf", tmp_path / "notes.txt.pdf"
    whole = pdf(2)
    path.write_bytes(whole[: len(whole) // 2])
    other.write_bytes(b"plain text, not a PDF: taken as soon as it holds still")
    seen = [stable.look([path, other]) for _ in range(INCOMPLETE_LOOKS)]
    assert seen[1] == [other] and all(path not in s for s in seen)
    with path.open("ab") as handle:  # the writer goes on
        handle.write(whole[len(whole) // 2 :])
    assert path not in stable.look([path])
    assert stable.look([path]) == [path]  # whole now: one still look is enough
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(whole[:200])
    looks = [stable.look([cut]) for _ in range(INCOMPLETE_LOOKS + 1)]
    assert looks[-2] == [] and looks[-1] == [cut]


def test_batch_window_gathers_files_into_one_job(sqlite_url: str, tmp_path: Path) -> None:
    clock = Clock()
    watcher = make_watcher(sqlite_url, tmp_path, clock)
    inbox = watcher.inbox
    (inbox / "a.pdf").write_bytes(pdf(2))
    (inbox / "notes.pdf").write_bytes(b"this is not a PDF")
    (inbox / "copying.pdf.part").write_bytes(b"%PDF- half")
    assert watcher.tick() is None  # first look: nothing known to be complete yet
    clock.now = 1
    assert watcher.tick() is None  # window opens
    (inbox / "b.pdf").write_bytes(pdf(1, seed=4))
    clock.now = 2
    assert watcher.tick() is None
    clock.now = 6
    outcome = watcher.tick()
    assert outcome is not None
    assert sorted(outcome.done) == ["a.pdf", "b.pdf"]
    assert "not a PDF" in outcome.failed["notes.pdf"]
    assert files_in(inbox) == ["copying.pdf.part"]
    assert files_in(inbox / "done") == ["a.pdf", "b.pdf"]
    assert files_in(inbox / "failed") == ["notes.pdf", "notes.pdf.reason.txt"]
    assert "not a PDF" in (inbox / "failed" / "notes.pdf.reason.txt").read_text()
    assert files_in(outcome.outbox) == [
        "a.json",
        "a.md",
        "b.json",
        "b.md",
        "report.html",
        "report.json",
        "summary.json",
    ]
    assert "Section" in (outcome.outbox / "a.md").read_text()
    assert json.loads((outcome.outbox / "report.json").read_text())["pages_total"] == 3
    assert list((inbox / "processing").iterdir()) == []
    assert job_count(sqlite_url) == 1


@pytest.mark.parametrize("crash", ["after_claim", "mid_pages", "mid_moves"])
def test_restart_mid_batch_loses_and_duplicates_nothing(
    db_url: str, tmp_path: Path, crash: str
) -> None:
    first = make_watcher(db_url, tmp_path)
    for name, pages in (("a.pdf", 2), ("b.pdf", 1), ("c.pdf", 1)):
        (first.inbox / name).write_bytes(pdf(pages, seed=len(name) + pages))
    batch = first._claim(sorted(first.inbox.glob("*.pdf")))
    assert batch is not None
    if crash != "after_claim":
        job_id = first._job_for(batch)
        with first.db.session() as session:
            pages = open_pages(session, job_id)
    if crash == "mid_pages":
        with first.db.session() as session:
            # The dead process held one page and had finished nothing else.
            claimed = page_path.claim(session.connection(), pages[0], "dead-host:1", 900)
            assert isinstance(claimed, page_path.ClaimedPage)
    if crash == "mid_moves":
        run_job_locally(first.settings, first.db, job_id, pages)
        move_to(batch / "a.pdf", first.inbox / "done", None)

    outcomes = make_watcher(db_url, tmp_path).recover()

    assert len(outcomes) == 1
    assert files_in(first.inbox / "done") == ["a.pdf", "b.pdf", "c.pdf"]
    assert files_in(first.inbox / "failed") == []
    assert list((first.inbox / "processing").iterdir()) == []
    summary = json.loads((outcomes[0].outbox / "summary.json").read_text())
    assert summary["pages_total"] == 4 and summary["pages_succeeded"] == 4
    assert job_count(db_url) == 1


def test_watch_cli_once_and_busy_inbox(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOLIO_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("FOLIO_ENGINE", "textlayer")
    monkeypatch.setenv("FOLIO_WATCH_POLL_S", "0.05")
    inbox, outbox = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    (inbox / "scan.pdf").write_bytes(pdf(1))
    result = CliRunner().invoke(cli, ["watch", str(inbox), "--outbox", str(outbox), "--once"])
    assert result.exit_code == 0, result.output
    assert "scan.pdf" in result.stdout
    assert files_in(inbox / "done") == ["scan.pdf"]
    assert len(list(outbox.glob("*/scan.md"))) == 1
    with inbox_lock(inbox):
        busy = CliRunner().invoke(cli, ["watch", str(inbox), "--once"])
    assert busy.exit_code == 6


def test_killed_watcher_resumes_its_batch_on_restart(sqlite_url: str, tmp_path: Path) -> None:
    """A real `folio watch` process killed (SIGKILL) mid-batch; the next one finishes the batch.

    The first watcher does one page, then holds the next at a gate (tests/gated_run.py) until
    it is killed: it dies mid-batch on any machine, never after a batch that ended first."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "scan.pdf").write_bytes(born_digital_pdf([page_text(n) for n in range(3)]))
    (inbox / "other.pdf").write_bytes(born_digital_pdf([page_text(9)]))
    gate = tmp_path / "at-gate"
    env = os.environ | {
        "FOLIO_DATABASE_URL": sqlite_url,
        "FOLIO_ENGINE": "textlayer",
        "FOLIO_CONCURRENCY": "1",
        "FOLIO_WATCH_WINDOW_S": "0",
        "FOLIO_WATCH_POLL_S": "0.1",
    }
    gated = [sys.executable, str(ROOT / "tests" / "gated_run.py"), "watch", str(inbox)]
    first_env = env | {"FOLIO_TEST_GATE_AFTER": "1", "FOLIO_TEST_GATE_FILE": str(gate)}
    first = subprocess.Popen(
        gated, env=first_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while not gate.exists():
            assert first.poll() is None and time.monotonic() < deadline, "no page reached the gate"
            time.sleep(0.05)
    finally:
        first.kill()
        first.wait()
    assert wait_for_pages(sqlite_url, 1, timeout=0) == 1, "one page done, the rest open"
    assert files_in(inbox / "done") == []

    command = [sys.executable, "-c", "from app.cli.main import main; main()", "watch", str(inbox)]
    second = subprocess.run([*command, "--once"], env=env, capture_output=True, timeout=300)

    assert second.returncode == 0, second.stderr.decode()
    assert files_in(inbox / "done") == ["other.pdf", "scan.pdf"]
    assert [p.name for p in (inbox / "processing").iterdir()] == []
    (batch,) = (inbox / "outbox").iterdir()
    summary = json.loads((batch / "summary.json").read_text())
    assert summary["pages_total"] == 4 and summary["pages_failed"] == 0
    assert job_count(sqlite_url) == 1


def wait_for_pages(db_url: str, at_least: int, timeout: float = 120) -> int:
    """Wait until `at_least` pages are finished; returns how many are."""
    deadline = time.monotonic() + timeout
    while True:
        with Database(db_url).session() as session:
            done = session.scalar(
                select(func.count()).select_from(Page).where(Page.status == "succeeded")
            )
        if (done or 0) >= at_least or time.monotonic() > deadline:
            return int(done or 0)
        time.sleep(0.05)


def test_a_file_renamed_mid_job_is_still_its_document(sqlite_url: str, tmp_path: Path) -> None:
    watcher = make_watcher(sqlite_url, tmp_path)
    (watcher.inbox / "a.pdf").write_bytes(pdf(1, seed=2))
    (watcher.inbox / "b.pdf").write_bytes(pdf(1, seed=3))
    batch = watcher._claim(sorted(watcher.inbox.glob("*.pdf")))
    assert batch is not None
    job_id = watcher._job_for(batch)
    with watcher.db.session() as session:
        pages = open_pages(session, job_id)
    run_job_locally(watcher.settings, watcher.db, job_id, pages)
    (batch / "a.pdf").rename(batch / "a renamed.pdf")  # its results are written already
    (outcome,) = make_watcher(sqlite_url, tmp_path).recover()
    assert sorted(outcome.done) == ["a renamed.pdf", "b.pdf"] and outcome.failed == {}
    assert files_in(watcher.inbox / "done") == ["a renamed.pdf", "b.pdf"]
