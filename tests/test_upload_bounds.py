"""Uploads hold the disk only while they may still be read (issue 62, defect 6): a document
that fails at ingest leaves no file behind, the upload folder's total is bounded by
`api_upload_dir_max_mb`, and no error a caller reads names a server path. Also: a zip member
with an empty name is a document, not a 500. The API over real HTTP on SQLite."""

from __future__ import annotations

from pathlib import Path

from app.api.uploads import folder_bytes
from tests.api_server import running_api, wait_for_job
from tests.hostile_inputs import good_pdf, raw_zip, zeros_zip
from tests.test_api import assert_problem, settings_for, submit

ZEROS = 900 * 1024  # each member under the 1 MiB per file of settings_for


def test_a_zip_of_zeros_behind_a_pdf_header_leaves_nothing_on_disk(
    sqlite_url: str, tmp_path: Path
) -> None:
    settings = settings_for(sqlite_url, tmp_path)
    bomb = zeros_zip(2, ZEROS)
    assert len(bomb) < 10_000  # a few KB that unpack to 1.8 MB
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        response = submit(client, [("zeros.zip", bomb), ("good.pdf", good_pdf(1))])
        assert response.status_code == 202, response.text  # type: ignore[attr-defined]
        job_id = response.json()["id"]  # type: ignore[attr-defined]
        job = wait_for_job(client, job_id)
        documents = client.get(f"/v1/jobs/{job_id}/documents")
    failed = [d for d in documents.json() if d["status"] == "failed"]
    assert len(failed) == 2 and job["status"] == "done"
    # What is left is the one good PDF the job read, not the 1.8 MB of zeros.
    assert folder_bytes(settings.upload_dir) == len(good_pdf(1))
    for text in (response.text, documents.text, str(job)):  # type: ignore[attr-defined]
        assert str(settings.upload_dir) not in text and str(tmp_path) not in text


def test_the_upload_folder_is_bounded(sqlite_url: str, tmp_path: Path) -> None:
    settings = settings_for(sqlite_url, tmp_path, api_upload_dir_max_mb=2)
    earlier = settings.upload_dir / "earlier-job" / "kept.pdf"
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"%PDF-1.4\n" + b"\0" * (1536 * 1024))  # 1.5 of the 2 MiB
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        junk = b"%PDF-1.4\n" + bytes(range(256)) * 3000  # 750 KiB: over the room left
        refused = submit(client, [("a.pdf", good_pdf(1)), ("big.pdf", junk)])
        assert_problem(refused, 507, "upload folder is full")
        assert client.get("/v1/jobs").json()["total"] == 0
        assert folder_bytes(settings.upload_dir) == earlier.stat().st_size  # nothing stayed
        fits = submit(client, [("a.pdf", good_pdf(1))])  # a small one still fits
        assert fits.status_code == 202, fits.text  # type: ignore[attr-defined]


def test_a_zip_member_with_an_empty_name_is_a_document(sqlite_url: str, tmp_path: Path) -> None:
    zipped = raw_zip([(b"", good_pdf(1)), (b"named.pdf", good_pdf(1, seed=3))])
    with running_api(settings_for(sqlite_url, tmp_path)) as api:
        client = api.client(api.key("alice"))
        response = submit(client, [("odd.zip", zipped)])
        assert response.status_code == 202, response.text  # type: ignore[attr-defined]
        job = wait_for_job(client, response.json()["id"])  # type: ignore[attr-defined]
    assert job["pages"] == {"succeeded": 2}
