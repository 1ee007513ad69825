"""Retention: `folio purge` and `retention_days` delete the files of jobs that ended long ago,
never a running job's, and keep the database rows unless asked."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.db.models import Job, Page
from app.jobs import document_limits
from app.jobs.results import load_results
from app.jobs.retention import purge
from app.pipeline.ingest import JobFields, ingest_files
from app.settings import Settings
from tests.api_server import running_api
from tests.distributed_support import wait_until, write_text_pdfs

DAY = 86_400


def upload_job(db: Database, uploads: Path, name: str, status: str, ended_days_ago: float) -> str:
    """A job as the API makes it: its files in `uploads/<name>/`, source `upload:<name>`."""
    folder = uploads / name
    write_text_pdfs(folder, documents=1, pages=2)
    files = [(p, p.stem) for p in sorted(folder.glob("*.pdf"))]
    settings = Settings(database_url=db.url)
    fields = JobFields(None, "textlayer", {"api_key_id": None})
    job_id = ingest_files(
        db, files, f"upload:{name}", fields, limits=document_limits(settings)
    ).job_id
    ended = datetime.now(UTC) - timedelta(days=ended_days_ago)
    with db.session() as session:
        finished = ended if status != "running" else None
        session.execute(
            update(Job).where(Job.id == job_id).values(status=status, finished_at=finished)
        )
        if status != "running":
            session.execute(update(Page).where(Page.job_id == job_id).values(status="succeeded"))
    return job_id


def make_old(path: Path, days: float) -> None:
    stamp = time.time() - days * DAY
    os.utime(path, (stamp, stamp))


@dataclass
class Files:
    db: Database
    uploads: Path
    zips: Path
    jobs: dict[str, str]


@pytest.fixture
def files(db_url: str, tmp_path: Path) -> Files:
    db = Database(db_url)
    uploads = tmp_path / "uploads"
    jobs = {
        "old": upload_job(db, uploads, "old", "done", 10),
        "cancelled": upload_job(db, uploads, "cancelled", "cancelled", 10),
        "recent": upload_job(db, uploads, "recent", "done", 1),
        "running": upload_job(db, uploads, "running", "running", 10),
    }
    make_old(uploads / "running", 10)  # old files, but its job still runs
    (uploads / "orphan").mkdir()
    make_old(uploads / "orphan", 10)
    zips = tmp_path / "zips"
    zips.mkdir()
    (zips / "folio-results-a.zip").write_bytes(b"PK")
    make_old(zips / "folio-results-a.zip", 10)
    (zips / "folio-results-b.zip").write_bytes(b"PK")  # being downloaded now
    return Files(db, uploads, zips, jobs)


def test_a_dry_run_lists_and_deletes_nothing(files: Files) -> None:
    db, uploads, zips = files.db, files.uploads, files.zips
    report = purge(db, uploads, 5, dry_run=True, with_rows=True, zip_dir=zips)
    names = sorted(p.name for p in report.folders)
    assert names == ["cancelled", "old", "orphan"]
    assert [p.name for p in report.zips] == ["folio-results-a.zip"]
    assert report.bytes > 0 and report.rows_deleted == 0
    assert all(p.exists() for p in report.folders + report.zips)


def test_purge_deletes_old_files_and_keeps_rows_and_running_jobs(
    files: Files,
) -> None:
    db, uploads, zips, jobs = files.db, files.uploads, files.zips, files.jobs
    purge(db, uploads, 5, zip_dir=zips)
    assert sorted(p.name for p in uploads.iterdir()) == ["recent", "running"]
    assert [p.name for p in zips.iterdir()] == ["folio-results-b.zip"]
    # The rows stay: the old job's results and report still load.
    assert load_results(db, jobs["old"]).status == "done"
    purge(db, uploads, 5, with_rows=True, zip_dir=zips)
    with db.session() as session:
        left = set(session.scalars(select(Job.id)))
    assert left == {jobs["recent"], jobs["running"]}


def test_folio_purge_command(files: Files, monkeypatch: pytest.MonkeyPatch) -> None:
    db, uploads = files.db, files.uploads
    monkeypatch.setenv("FOLIO_UPLOAD_DIR", str(uploads))
    args = ["purge", "--older-than", "5", "--database-url", db.url]
    # Wide enough for the path on one line, however deep the test's folder (pytest-xdist's
    # workers add one level).
    dry = CliRunner().invoke(app, [*args, "--dry-run"], env={"COLUMNS": "200"})
    assert dry.exit_code == 0, dry.output
    assert "Would delete" in dry.output and str(uploads / "old") in dry.output
    assert (uploads / "old").exists()
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert not (uploads / "old").exists() and (uploads / "running").exists()
    refused = CliRunner().invoke(app, ["purge", "--older-than", "-1"])
    assert refused.exit_code == 2


def test_the_api_server_applies_retention_days(files: Files) -> None:
    db, uploads = files.db, files.uploads
    settings = Settings(database_url=db.url, upload_dir=uploads, retention_days=5)
    with running_api(settings):
        wait_until(lambda: not (uploads / "old").exists(), 30, "the retention sweep")
    assert (uploads / "recent").exists() and (uploads / "running").exists()
