"""`folio run` as a user runs it: exit codes, files written, messages shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app
from app.db.engine import dispose_engines
from app.pdf import samples

runner = CliRunner()


@pytest.fixture
def env(sqlite_url: str) -> dict[str, str]:
    return {"FOLIO_DATABASE_URL": sqlite_url, "COLUMNS": "160"}


def test_samples_run_cleanly_and_rerun_skips(tmp_path: Path, env: dict[str, str]) -> None:
    result = runner.invoke(app, ["samples", str(tmp_path / "s")], env=env)
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    first = runner.invoke(app, ["run", str(tmp_path / "s"), "--out", str(out)], env=env)
    assert first.exit_code == exit_codes.OK, first.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pages_total"] == 6 and summary["pages_failed"] == 0
    assert "Section 4" in (out / "scanned-letter.md").read_text()
    second = runner.invoke(app, ["run", str(tmp_path / "s"), "--out", str(out)], env=env)
    assert second.exit_code == exit_codes.OK
    assert "Nothing to do: 3 documents already done" in second.output


def test_a_rerun_keeps_the_whole_folder_in_its_summary(tmp_path: Path, env: dict[str, str]) -> None:
    samples.write_samples(tmp_path / "s")
    out = tmp_path / "out"
    args = ["run", str(tmp_path / "s"), "--out", str(out)]
    assert runner.invoke(app, args, env=env).exit_code == exit_codes.OK
    first = json.loads((out / "summary.json").read_text())
    report_md = (out / "report-2.md").read_text()  # report.pdf's: report.json is the job's

    again = runner.invoke(app, args, env=env)
    assert again.exit_code == exit_codes.OK, again.output
    assert "Nothing to do: 3 documents already done" in again.output
    # Two lines (that, and where the results are), not empty tables and a 0/0 bar.
    assert len(again.output.splitlines()) == 2, again.output
    assert "0/0" not in again.output and "By model" not in again.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["job_id"] != first["job_id"]
    assert first["job_id"] in summary["rerun_note"]
    same = ("documents_total", "documents_done", "pages_total", "pages_succeeded")
    assert {k: summary[k] for k in same} == {k: first[k] for k in same}
    assert summary["documents_skipped"] == 3 == summary["documents_done"]
    assert {d["done_in_job"] for d in summary["documents"]} == {first["job_id"]}
    assert (out / "report-2.md").read_text() == report_md

    # A new document next to the done ones: it is processed, the others carried over.
    (tmp_path / "s" / "new.pdf").write_bytes(samples.born_digital_pdf([samples.page_text(9)]))
    partial = runner.invoke(app, args, env=env)
    assert partial.exit_code == exit_codes.OK, partial.output
    assert "Skipped 3 documents already done" in partial.output
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["documents_total"], summary["documents_done"]) == (4, 4)
    assert summary["pages_total"] == first["pages_total"] + 1
    assert "3 documents done earlier" in partial.output


def test_broken_files_give_the_partial_exit_code(tmp_path: Path, env: dict[str, str]) -> None:
    samples.write_samples(tmp_path / "s", broken=True)
    result = runner.invoke(app, ["run", str(tmp_path / "s"), "--out", str(tmp_path / "o")], env=env)
    assert result.exit_code == exit_codes.SOME_FAILED
    assert "PDF is encrypted" in result.output and "not a PDF" in result.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["documents_failed"] == 4 and summary["pages_succeeded"] == 6


def test_missing_input_and_unknown_plan(tmp_path: Path, env: dict[str, str]) -> None:
    missing = runner.invoke(app, ["run", str(tmp_path / "nope")], env=env)
    assert missing.exit_code == exit_codes.NO_INPUT
    (tmp_path / "empty").mkdir()
    empty = runner.invoke(app, ["run", str(tmp_path / "empty")], env=env)
    assert empty.exit_code == exit_codes.NO_INPUT and "No PDF found" in empty.output
    bad = runner.invoke(app, ["run", str(tmp_path / "empty"), "--engine", "nope"], env=env)
    assert bad.exit_code == exit_codes.CONFIG
    unknown = runner.invoke(app, ["results", "nope", "--out", str(tmp_path / "r")], env=env)
    assert unknown.exit_code == exit_codes.NO_INPUT and "No job 'nope'" in unknown.output


def test_db_upgrade_on_postgres(postgres_url: str) -> None:
    result = runner.invoke(app, ["db", "upgrade", "--database-url", postgres_url])
    assert result.exit_code == 0 and "up to date" in result.output


def test_the_database_goes_to_the_data_folder_not_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    samples.write_samples(tmp_path / "s")
    result = runner.invoke(app, ["run", "s", "--out", "out"], env={"COLUMNS": "160"})
    assert result.exit_code == exit_codes.OK, result.output
    assert (tmp_path / "folio-data" / "folio.db").is_file()  # FOLIO_DATA_DIR, from conftest.py
    assert not list(tmp_path.glob("*.db")) and (tmp_path / "out" / "summary.json").is_file()
    dispose_engines()
