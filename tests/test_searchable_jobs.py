"""Searchable PDFs asked for as a user asks: `folio run --pdf` into a folder, the API's `pdf`
option (its results zip), a bucket job into an s3:// prefix, and the setting for a default.
A PDF that cannot be written costs its document nothing else: Markdown, JSON and a reason."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pymupdf
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app
from app.pdf.samples import scanned_pdf, write_samples
from app.searchable.words import layer_text
from app.textmatch import word_f1
from tests.api_server import running_api, wait_for_job
from tests.searchable_pdfs import damaged_pdf, owner_encrypted_pdf, signed_pdf
from tests.test_api import settings_for, submit

runner = CliRunner()


def copies_out_as_kept(pdf: bytes, document: dict[str, Any], original: bytes) -> None:
    """Each page copies out as its kept text (or as its own layer did), and looks the same."""
    searchable = pymupdf.open(stream=pdf, filetype="pdf")
    before = pymupdf.open(stream=original, filetype="pdf")
    for page in document["pages"]:
        index = page["number"] - 1
        copied = searchable[index].get_text()
        if page["engine"] == "textlayer":
            assert copied == before[index].get_text()
        else:
            assert word_f1(copied, layer_text(page["text"])) >= 0.99, page["number"]
        shown = searchable[index].get_pixmap(dpi=72).samples
        assert shown == before[index].get_pixmap(dpi=72).samples


def test_folio_run_pdf_writes_one_beside_each_md_and_says_why_not(
    tmp_path: Path, sqlite_url: str
) -> None:
    source = tmp_path / "in"
    write_samples(source)
    bad = {"locked": owner_encrypted_pdf, "signed": signed_pdf, "damaged": damaged_pdf}
    for name, make in bad.items():
        (source / f"{name}.pdf").write_bytes(make(f"The {name} letter reads as any other."))
    out = tmp_path / "out"
    env = {"FOLIO_DATABASE_URL": sqlite_url, "COLUMNS": "200"}
    result = runner.invoke(app, ["run", str(source), "-o", str(out), "--pdf"], env=env)
    assert result.exit_code == exit_codes.OK, result.output
    summary = {d["file"]: d for d in json.loads((out / "summary.json").read_text())["documents"]}
    for file, original in {
        "report-2": "report.pdf",
        "scanned-letter": "scanned-letter.pdf",
        "mixed__notes": "mixed/notes.pdf",
    }.items():
        assert summary[file]["pdf"] == f"{file}.pdf" and summary[file]["pdf_error"] is None
        document = json.loads((out / f"{file}.json").read_text())
        pdf = (out / f"{file}.pdf").read_bytes()
        copies_out_as_kept(pdf, document, (source / original).read_bytes())
    for name, reason in {"locked": "encrypted", "signed": "signed", "damaged": "damaged"}.items():
        assert "reads as any other" in (out / f"{name}.md").read_text()
        assert (out / f"{name}.json").exists() and not (out / f"{name}.pdf").exists()
        assert summary[name]["pdf"] is None and reason in summary[name]["pdf_error"]
        assert f"No searchable PDF for {name}" in result.output


def test_the_setting_is_the_default_and_no_pdf_overrides_it(
    tmp_path: Path, sqlite_url: str
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "letter.pdf").write_bytes(scanned_pdf(["A short letter to be read."]))
    env = {"FOLIO_DATABASE_URL": sqlite_url, "FOLIO_SEARCHABLE_PDF": "true"}
    by_default = runner.invoke(
        app, ["run", str(tmp_path / "in"), "-o", str(tmp_path / "a")], env=env
    )
    assert by_default.exit_code == exit_codes.OK, by_default.output
    assert (tmp_path / "a" / "letter.pdf").exists()
    args = ["run", str(tmp_path / "in"), "-o", str(tmp_path / "b"), "--no-pdf", "--force"]
    declined = runner.invoke(app, args, env=env)
    assert declined.exit_code == exit_codes.OK, declined.output
    assert (tmp_path / "b" / "letter.md").exists() and not (tmp_path / "b" / "letter.pdf").exists()
    assert "pdf" not in json.loads((tmp_path / "b" / "summary.json").read_text())["documents"][0]


def test_the_api_option_puts_it_in_the_results_zip(db_url: str, tmp_path: Path) -> None:
    scan = scanned_pdf(["The office opens at nine and closes at five on weekdays."])
    settings = settings_for(
        db_url, tmp_path, engine="tesseract", api_max_file_mb=4, max_page_megapixels=40
    )
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        asked = submit(client, [("a.pdf", scan)], pdf="true").json()["id"]  # type: ignore[attr-defined]
        plain = submit(client, [("b.pdf", scan)]).json()["id"]  # type: ignore[attr-defined]
        assert wait_for_job(client, asked)["options"]["pdf"] is True  # type: ignore[index]
        wait_for_job(client, plain)
        zipped = zipfile.ZipFile(io.BytesIO(client.get(f"/v1/jobs/{asked}/results").content))
        without = zipfile.ZipFile(io.BytesIO(client.get(f"/v1/jobs/{plain}/results").content))
    assert set(zipped.namelist()) == {"a.md", "a.json", "a.pdf", "summary.json"}
    assert set(without.namelist()) == {"b.md", "b.json", "summary.json"}
    copies_out_as_kept(zipped.read("a.pdf"), json.loads(zipped.read("a.json")), scan)


def test_a_bucket_job_writes_it_under_the_results_prefix(
    s3_server: Any, bucket: str, tmp_path: Path, sqlite_url: str
) -> None:
    scan = scanned_pdf(["Stored documents come back searchable where their results go."])
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="in/stored.pdf", Body=scan)
    args = ["run", f"s3://{bucket}/in/", "--out", f"s3://{bucket}/out/", "--pdf"]
    result = runner.invoke(app, args, env={"FOLIO_DATABASE_URL": sqlite_url})
    assert result.exit_code == exit_codes.OK, result.output

    def get(key: str) -> bytes:
        return bytes(client.get_object(Bucket=bucket, Key=f"out/{key}")["Body"].read())

    copies_out_as_kept(get("stored.pdf"), json.loads(get("stored.json")), scan)
    assert json.loads(get("summary.json"))["documents"][0]["pdf"] == "stored.pdf"
