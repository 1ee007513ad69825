"""Every table the CLI prints, run through the real CLI in an 80-column terminal.

Nothing may be cut: no header or value ends in "…", no line is wider than 80, and job ids
appear whole (a user copies them into the next command).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import redis
from rich.console import Console
from sqlalchemy import select
from typer.testing import CliRunner, Result

from app.cli.main import app
from app.cli.views import page_progress
from app.db.engine import Database
from app.db.models import Job
from app.domain import PageStatus
from app.jobs import JobRequest, create_job
from app.pdf import samples
from app.settings import Settings
from tests.conftest import REDIS_URL, unavailable
from tests.report_scenario import insert_job

WIDTH = 80
runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(WIDTH), **(env or {})})
    assert result.exit_code in (0, 3), result.output
    return result


def assert_fits(output: str, *whole: str) -> None:
    assert "…" not in output, output
    too_wide = [line for line in output.splitlines() if len(line) > WIDTH]
    assert not too_wide, "\n".join(too_wide)
    for value in whole:
        assert value in output, f"{value!r} is not shown whole:\n{output}"


@pytest.fixture
def done_job(tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The demo folder, broken files included (long reasons), run once; its job id."""
    monkeypatch.setenv("FOLIO_DATABASE_URL", sqlite_url)
    samples.write_samples(tmp_path / "in", broken=True)
    result = invoke("run", str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert_fits(result.stdout, summary["job_id"], "encrypted", "By model", "Slowest pages")
    return str(summary["job_id"])


def test_run_summary_and_report_tables(done_job: str) -> None:
    """`folio run`'s own tables are checked by the fixture; `report --format table` here."""
    assert_fits(invoke("report", done_job, "--format", "table").stdout, done_job, "tesseract")


def test_report_table_with_vlm_models(sqlite_url: str) -> None:
    job_id = insert_job(Database(sqlite_url))
    output = invoke("report", job_id, "-f", "table", "--database-url", sqlite_url).stdout
    assert_fits(output, job_id, "m-gpu", "m-api", "degenerate")


def test_status(done_job: str) -> None:
    assert_fits(invoke("status", done_job).stdout, done_job, "succeeded")


def test_results_and_export_dpo(done_job: str, tmp_path: Path) -> None:
    assert_fits(invoke("results", done_job, "--out", str(tmp_path / "again")).output)
    output = invoke("export-dpo", done_job, "--out", str(tmp_path / "dpo")).stdout
    assert_fits(output, "pairs written")


def test_scan(tmp_path: Path) -> None:
    looping = "Ingredients:\n" + "1 teaspoon garlic powder\n1 teaspoon salt\n" * 30
    name = "an-output-file-of-a-model-run-page-0001"
    (tmp_path / f"{name}.txt").write_text(looping)
    (tmp_path / "healthy.txt").write_text("The committee approved the budget.")
    output = invoke("scan", str(tmp_path)).stdout
    assert_fits(output, f"{name}.txt", "degenerate", "Degeneration rate: 1/2")


def test_apikey_list(sqlite_url: str) -> None:
    name = "a-name-for-the-nightly-batch-importer"
    invoke("apikey", "create", name, "--database-url", sqlite_url)
    assert_fits(invoke("apikey", "list", "--database-url", sqlite_url).stdout, name)


def test_watch_batch_table(tmp_path: Path, sqlite_url: str) -> None:
    inbox = tmp_path / "inbox"
    samples.write_samples(inbox)
    env = {"FOLIO_DATABASE_URL": sqlite_url, "FOLIO_WATCH_POLL_S": "0.05"}
    env["FOLIO_WATCH_WINDOW_S"] = "0"
    output = invoke("watch", str(inbox), "--once", env=env).stdout
    with Database(sqlite_url).session() as session:
        job_id = session.execute(select(Job.id)).scalar_one()
    assert_fits(output, job_id, "done")


@pytest.mark.redis
def test_recover(tmp_path: Path, sqlite_url: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as exc:
        unavailable(f"Redis at {REDIS_URL}: {exc}")
    prefix = f"folio-narrow-{tmp_path.name}"
    samples.write_samples(tmp_path / "in")
    settings = Settings(database_url=sqlite_url)
    request = JobRequest(tmp_path / "in", None, "textlayer")
    job_id = create_job(settings, Database(sqlite_url), request).job_id
    env = {"FOLIO_BROKER_URL": REDIS_URL, "FOLIO_QUEUE_PREFIX": prefix}
    try:
        output = invoke("recover", job_id, "--database-url", sqlite_url, env=env).stdout
    finally:
        keys = list(client.scan_iter(f"{prefix}:*"))
        if keys:
            client.delete(*keys)
        client.close()
    assert_fits(output, job_id, "pages queued again")


def test_every_help_screen() -> None:
    from docsgen.cli_reference import command_options

    assert_fits(invoke("--help").stdout, "export-dpo")
    for command, options in command_options().items():
        output = invoke(*command.split()[1:], "--help").stdout
        assert_fits(output, *options)


def test_progress_bar_of_a_big_job() -> None:
    """`folio run`'s bar (on standard error) with six-digit counts and every status tallied."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=WIDTH, force_terminal=False)
    statuses = [PageStatus.SUCCEEDED] * 3 + [PageStatus.FALLBACK, PageStatus.FAILED]
    with page_progress(console, 123_456, "pages") as on_page:
        for page_id, status in enumerate(statuses):
            on_page(page_id, status)
    assert_fits(buffer.getvalue(), "5/123456", "ok 3 fallback 1 failed 1")
