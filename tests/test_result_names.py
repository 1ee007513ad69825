"""Results never overwrite what they do not own, through `folio run` and the API: a document
called `summary` or `report` beside the job's own files, a rerun that skips a document done
under another name, and keys too long or too odd for a file name (moto, tests/s3_server.py)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app as cli
from tests.api_server import running_api, wait_for_job
from tests.hostile_inputs import good_pdf
from tests.test_api import settings_for

runner = CliRunner()


@pytest.fixture
def env(sqlite_url: str) -> dict[str, str]:
    return {"FOLIO_DATABASE_URL": sqlite_url, "FOLIO_ENGINE": "textlayer", "COLUMNS": "200"}


def test_documents_called_summary_and_report_keep_their_json(
    tmp_path: Path, env: dict[str, str]
) -> None:
    folder, out = tmp_path / "docs", tmp_path / "out"
    folder.mkdir()
    (folder / "summary.pdf").write_bytes(good_pdf(1, seed=11))
    (folder / "report.pdf").write_bytes(good_pdf(2, seed=12))
    result = runner.invoke(cli, ["run", str(folder), "--out", str(out)], env=env)
    assert result.exit_code == exit_codes.OK, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["documents_total"] == 2  # the job's own summary, not a document's JSON
    files = {d["name"]: d["file"] for d in summary["documents"]}
    assert files == {"report": "report-2", "summary": "summary-2"}
    assert json.loads((out / "summary-2.json").read_text())["name"] == "summary"
    assert len(json.loads((out / "report-2.json").read_text())["pages"]) == 2
    assert "Section 11" in (out / "summary-2.md").read_text()


def test_a_rerun_reuses_results_only_for_the_same_document(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """`skip/` then `skip/sub/` into one output: sub/a.pdf is skipped the second time (same
    content, same output), now named `a`, where `a.md` holds skip/a.pdf's text."""
    folder, out = tmp_path / "skip", tmp_path / "out"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.pdf").write_bytes(good_pdf(1, seed=21))
    (folder / "sub" / "a.pdf").write_bytes(good_pdf(1, seed=22))
    first = runner.invoke(cli, ["run", str(folder), "--out", str(out)], env=env)
    assert first.exit_code == exit_codes.OK, first.output
    assert "Section 21" in (out / "a.md").read_text()
    second = runner.invoke(cli, ["run", str(folder / "sub"), "--out", str(out)], env=env)
    assert second.exit_code == exit_codes.OK, second.output
    summary = json.loads((out / "summary.json").read_text())
    assert [(d["name"], d["status"]) for d in summary["documents"]] == [("a", "skipped")]
    assert "Section 22" in (out / "a.md").read_text()  # sub/a.pdf's own text
    assert json.loads((out / "a.json").read_text())["path"].endswith("sub/a.pdf")
    third = runner.invoke(cli, ["run", str(folder / "sub"), "--out", str(out)], env=env)
    assert third.exit_code == exit_codes.OK, third.output
    assert "Section 22" in (out / "a.md").read_text()


def test_long_and_odd_keys_are_written_under_names_that_fit(
    sqlite_url: str, s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    s3: Any = s3_server.client()
    long_key = "in/" + "k" * 900 + ".pdf"  # S3 takes 1,024 bytes; a file name 255
    odd_key = "in/tab\there\x7fand\\back.pdf"
    s3.put_object(Bucket=bucket, Key=long_key, Body=good_pdf(1, seed=31))
    s3.put_object(Bucket=bucket, Key=odd_key, Body=good_pdf(1, seed=32))
    s3.put_object(Bucket=bucket, Key="in/plain.pdf", Body=good_pdf(1, seed=33))
    allowed = [f"s3://{bucket}/in/", f"s3://{bucket}/out/"]
    with running_api(settings_for(sqlite_url, tmp_path, api_allowed_uris=allowed)) as api:
        client = api.client(api.key("alice"))
        body = {"uri": f"s3://{bucket}/in/", "results_uri": f"s3://{bucket}/out/"}
        response = client.post("/v1/jobs", json=body)
        assert response.status_code == 202, response.text
        job = wait_for_job(client, response.json()["id"])
        download = client.get(f"/v1/jobs/{job['id']}/results")
    assert job["status"] == "done" and job["pages"] == {"succeeded": 3}
    assert download.status_code == 200, download.text
    names = zipfile.ZipFile(io.BytesIO(download.content)).namelist()
    assert "plain.md" in names and "summary.json" in names and len(names) == 7
    assert all(len(n.encode()) <= 255 and "\t" not in n and "\\" not in n for n in names)
    written = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="out/")["Contents"]]
    assert len(written) == 8  # 3 x (.md, .json), summary.json, report.json
    key = f"out/{job['id']}/summary.json"
    summary = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    assert summary["documents_done"] == 3


@pytest.mark.postgres
def test_a_key_with_a_nul_fails_alone_on_postgres(
    postgres_url: str, s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    import os

    s3: Any = s3_server.client()
    s3.put_object(Bucket=bucket, Key="in/nul\x00name.pdf", Body=good_pdf(1, seed=51))
    s3.put_object(Bucket=bucket, Key="in/fine.pdf", Body=good_pdf(1, seed=52))
    out = tmp_path / "out"
    env = dict(os.environ) | {"FOLIO_DATABASE_URL": postgres_url, "FOLIO_ENGINE": "textlayer"}
    result = runner.invoke(cli, ["run", f"s3://{bucket}/in/", "--out", str(out)], env=env)
    assert result.exit_code == exit_codes.SOME_FAILED, result.output
    summary = json.loads((out / "summary.json").read_text())
    documents = {d["name"]: d for d in summary["documents"]}
    assert documents["fine"]["status"] == "done"
    assert documents["nul%00name"]["error_category"] == "unsupported_key"
    assert "Section 52" in (out / "fine.md").read_text()


def test_results_never_go_into_the_input_itself(
    s3_server: Any, bucket: str, tmp_path: Path, env: dict[str, str]
) -> None:
    """The caller's own notes.md beside notes.pdf would be replaced by its results."""
    import os

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.pdf").write_bytes(good_pdf(1))
    (folder / "notes.md").write_text("my own notes")
    s3: Any = s3_server.client()
    s3.put_object(Bucket=bucket, Key="in/notes.pdf", Body=good_pdf(1))
    s3.put_object(Bucket=bucket, Key="in/notes.md", Body=b"my own notes")
    runs = [
        [str(folder), "--out", str(folder)],
        [str(folder), "--out", f"{folder}/"],
        [f"s3://{bucket}/in/", "--out", f"s3://{bucket}/in"],
    ]
    for args in runs:
        result = runner.invoke(cli, ["run", *args], env=dict(os.environ) | env)
        assert result.exit_code == exit_codes.CONFIG, result.output
        assert "is the input itself" in result.output
    assert (folder / "notes.md").read_text() == "my own notes"
    assert s3.get_object(Bucket=bucket, Key="in/notes.md")["Body"].read() == b"my own notes"
