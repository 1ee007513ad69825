"""The REST API over real HTTP (uvicorn on a free port) against SQLite and PostgreSQL."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest
from typer.testing import CliRunner

from app.api.runner import LocalJobRunner
from app.cli.main import app as cli
from app.db.engine import Database
from app.db.models import Job
from app.pdf.samples import born_digital_pdf, page_text
from app.settings import Settings
from tests.api_server import Api, running_api, wait_for_job

PROBLEM = "application/problem+json"
PART_HEAD = (
    b'--xyz\r\nContent-Disposition: form-data; name="files"; filename="a.pdf"\r\n'
    b"Content-Type: application/pdf\r\n\r\n"
)


def pdf(pages: int, seed: int = 0) -> bytes:
    return born_digital_pdf([page_text(seed + n) for n in range(pages)])


def image_bomb_pdf(side: int = 1000) -> bytes:
    """One page with a `side` x `side` image: tiny on disk, `side**2` pixels when decoded."""
    doc = pymupdf.open()
    page = doc.new_page()
    pixmap = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, side, side), False)
    pixmap.clear_with(255)
    page.insert_image(page.rect, pixmap=pixmap)
    data = bytes(doc.tobytes(deflate=True))
    doc.close()
    return data


def settings_for(db_url: str, tmp_path: Path, **extra: object) -> Settings:
    values: dict[str, object] = {
        "database_url": db_url,
        "engine": "textlayer",
        "concurrency": 1,
        "upload_dir": tmp_path / "uploads",
        "api_allowed_roots": [tmp_path / "allowed"],
        "api_max_upload_mb": 4,
        "api_max_file_mb": 1,
        "api_max_files_per_job": 6,
        "api_max_pages_per_file": 4,
        "api_max_pages_per_job": 8,
        "max_page_megapixels": 0.5,
    }
    return Settings(**(values | extra))  # type: ignore[arg-type]


@pytest.fixture
def api(db_url: str, tmp_path: Path) -> Iterator[Api]:
    with running_api(settings_for(db_url, tmp_path)) as server:
        yield server


def submit(client: object, files: list[tuple[str, bytes]], **data: str) -> object:
    parts = [("files", (name, body, "application/octet-stream")) for name, body in files]
    return client.post("/v1/jobs", files=parts, data=data)  # type: ignore[attr-defined]


def assert_problem(response: object, status: int, detail_part: str = "") -> None:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    assert response.headers["content-type"].startswith(PROBLEM)  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert body["status"] == status and body["title"]
    assert detail_part in (body["detail"] or "")


def test_only_health_works_without_a_key(api: Api) -> None:
    anonymous = api.client(None)
    assert anonymous.get("/healthz").json() == {"status": "ok"}
    for path in ("/v1/jobs", "/v1/jobs/x", "/metrics"):
        assert_problem(anonymous.get(path), 401, "API key")
    assert_problem(api.client("folio_not-a-real-key").get("/v1/jobs"), 401, "unknown")
    assert_problem(anonymous.post("/v1/jobs", json={"folder": "/"}), 401)


def test_upload_runs_and_refuses_bad_files_one_by_one(api: Api) -> None:
    client = api.client(api.key("alice"))
    files = [
        ("report.pdf", pdf(2)),
        ("report.pdf", pdf(1, seed=5)),  # same name: must not overwrite the first
        ("../../etc/passwd.pdf", pdf(1, seed=9)),
        ("notes.txt", b"just some text, not a PDF at all"),
    ]
    response = submit(client, files, metadata='{"batch": "b1"}')
    assert response.status_code == 202, response.text  # type: ignore[attr-defined]
    job = wait_for_job(client, response.json()["id"])  # type: ignore[attr-defined]
    assert job["status"] == "done"
    assert job["options"]["metadata"] == {"batch": "b1"}  # type: ignore[index]
    docs = {d["name"]: d for d in client.get(f"/v1/jobs/{job['id']}/documents").json()}
    assert set(docs) == {"report", "report-2", "etc__passwd", "notes.txt"}
    assert docs["report"]["page_count"] == 2 and docs["report-2"]["page_count"] == 1
    assert docs["report"]["status"] == "done" and docs["etc__passwd"]["status"] == "done"
    assert docs["notes.txt"]["status"] == "failed"
    assert "not a PDF" in docs["notes.txt"]["error"]
    uploads = Path(api.settings.upload_dir).resolve()
    stored = [p for p in uploads.rglob("*") if p.is_file()]
    # notes.txt failed at ingest: its file went with it (issue 62), the three PDFs stay
    assert len(stored) == 3 and all(p.resolve().is_relative_to(uploads) for p in stored)


def test_pages_report_results_and_metrics(api: Api) -> None:
    client = api.client(api.key("alice"))
    job_id = submit(client, [("a.pdf", pdf(2)), ("b.pdf", pdf(1))]).json()["id"]  # type: ignore[attr-defined]
    assert wait_for_job(client, job_id)["pages"] == {"succeeded": 3}
    pages = client.get(f"/v1/jobs/{job_id}/pages", params={"status": "succeeded"}).json()
    assert pages["total"] == 3
    detail = client.get(f"/v1/jobs/{job_id}/pages/{pages['items'][0]['id']}").json()
    assert "Section" in detail["text"]
    assert detail["attempts"][0]["engine"] == "textlayer"
    assert detail["attempts"][0]["status"] == "ok"
    assert client.get(f"/v1/jobs/{job_id}/report").json()["pages_total"] == 3
    html = client.get(f"/v1/jobs/{job_id}/report", params={"format": "html"})
    assert html.headers["content-type"].startswith("text/html") and "<html" in html.text
    csv = client.get(f"/v1/jobs/{job_id}/report", params={"format": "csv"})
    assert csv.headers["content-type"].startswith("text/csv") and csv.text.count("\n") >= 3
    results = client.get(f"/v1/jobs/{job_id}/results")
    names = set(zipfile.ZipFile(io.BytesIO(results.content)).namelist())
    assert names == {"a.md", "a.json", "b.md", "b.json", "summary.json"}
    assert 'folio_pages_total{status="succeeded"} 3.0' in client.get("/metrics").text
    listed = client.get("/v1/jobs", params={"status": "done", "limit": 5}).json()
    assert [j["id"] for j in listed["items"]] == [job_id] and listed["total"] == 1


def test_limits_answer_413_with_a_reason(api: Api) -> None:
    client = api.client(api.key("alice"))
    assert_problem(submit(client, [("big.pdf", pdf(5))]), 413, "pages per file")
    assert_problem(submit(client, [(f"{n}.pdf", pdf(3)) for n in range(3)]), 413, "pages per job")
    assert_problem(submit(client, [(f"{n}.pdf", pdf(1)) for n in range(7)]), 413, "files")
    too_big = b"%PDF-1.7\n" + b"0" * (2**20 + 10)
    assert_problem(submit(client, [("huge.pdf", too_big)]), 413, "larger than 1 MiB")
    body = b"x" * (4 * 2**20 + 1)
    assert_problem(client.post("/v1/jobs", content=body), 413, "upload limit")
    chunked = client.post(  # no Content-Length: counted as it streams in
        "/v1/jobs",
        content=iter([PART_HEAD] + [b"x" * 2**20] * 5),
        headers={"content-type": "multipart/form-data; boundary=xyz"},
    )
    assert_problem(chunked, 413, "upload limit")
    assert client.get("/v1/jobs").json()["total"] == 0
    leftovers = [p for p in Path(api.settings.upload_dir).rglob("*") if p.is_file()]
    assert leftovers == []


def test_zip_upload_is_flattened_and_zip_bombs_stop_at_the_limit(api: Api) -> None:
    client = api.client(api.key("alice"))
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("scans/one.pdf", pdf(1))
        z.writestr("../../../../tmp/evil.pdf", pdf(1, seed=3))
        z.writestr("scans/", b"")
    response = submit(client, [("batch.zip", archive.getvalue())])
    job = wait_for_job(client, response.json()["id"])  # type: ignore[attr-defined]
    docs = client.get(f"/v1/jobs/{job['id']}/documents").json()
    assert sorted(d["name"] for d in docs) == ["scans__one", "tmp__evil"]
    assert all(d["status"] == "done" for d in docs)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("bomb.pdf", b"%PDF-" + b"\0" * (50 * 2**20))
    assert len(bomb.getvalue()) < 2**20
    assert_problem(submit(client, [("bomb.zip", bomb.getvalue())]), 413, "larger than 1 MiB")
    assert_problem(submit(client, [("broken.zip", b"PK\x03\x04 not really")]), 400, "zip")


def test_decompression_bomb_page_is_refused(api: Api) -> None:
    client = api.client(api.key("alice"))
    response = submit(client, [("bomb.pdf", image_bomb_pdf()), ("fine.pdf", pdf(1))])
    job = wait_for_job(client, response.json()["id"])  # type: ignore[attr-defined]
    docs = {d["name"]: d for d in client.get(f"/v1/jobs/{job['id']}/documents").json()}
    assert docs["bomb"]["status"] == "failed"
    assert docs["bomb"]["error_category"] == "decompression_bomb"
    assert docs["fine"]["status"] == "done"


def test_a_key_sees_only_its_own_jobs(api: Api) -> None:
    alice, bob = api.client(api.key("alice")), api.client(api.key("bob"))
    job_id = submit(alice, [("a.pdf", pdf(1))]).json()["id"]  # type: ignore[attr-defined]
    wait_for_job(alice, job_id)
    for path in ("", "/documents", "/pages", "/report", "/results"):
        assert_problem(bob.get(f"/v1/jobs/{job_id}{path}"), 404, "no job")
    assert_problem(bob.post(f"/v1/jobs/{job_id}/cancel"), 404)
    assert bob.get("/v1/jobs").json()["total"] == 0
    assert alice.get("/v1/jobs").json()["total"] == 1


def test_server_folder_only_under_allowed_roots(api: Api, tmp_path: Path) -> None:
    client = api.client(api.key("alice"))
    allowed = tmp_path / "allowed" / "in"
    allowed.mkdir(parents=True)
    (allowed / "x.pdf").write_bytes(pdf(1))
    (tmp_path / "secret").mkdir()
    response = client.post("/v1/jobs", json={"folder": str(allowed), "priority": 3})
    assert response.status_code == 202
    assert wait_for_job(client, response.json()["id"])["pages"] == {"succeeded": 1}
    assert_problem(client.post("/v1/jobs", json={"folder": str(tmp_path / "secret")}), 403)
    sneaky = str(tmp_path / "allowed" / ".." / "secret")
    assert_problem(client.post("/v1/jobs", json={"folder": sneaky}), 403, "allowed roots")
    missing = client.post("/v1/jobs", json={"folder": str(tmp_path / "allowed" / "nope")})
    assert_problem(missing, 404)
    (tmp_path / "secret" / "s.pdf").write_bytes(pdf(1))
    (tmp_path / "allowed" / "link").mkdir()
    (tmp_path / "allowed" / "link" / "s.pdf").symlink_to(tmp_path / "secret" / "s.pdf")
    linked = client.post("/v1/jobs", json={"folder": str(tmp_path / "allowed" / "link")})
    assert_problem(linked, 422, "no PDF")
    invalid = client.post("/v1/jobs", json={"folder": str(allowed), "dpi": 5})
    assert_problem(invalid, 422)
    assert invalid.json()["errors"][0]["loc"] == ["dpi"]
    assert_problem(client.post("/v1/jobs", json={"folder": str(allowed), "engine": "nope"}), 422)
    assert_problem(client.get("/v1/jobs", params={"limit": 0}), 422)
    assert_problem(
        client.post("/v1/jobs", content=b"x", headers={"content-type": "text/plain"}), 415
    )


class HeldRunner:
    """A JobRunner that queues jobs and runs them only when told (to cancel before they run)."""

    def __init__(self, settings: Settings) -> None:
        self.local = LocalJobRunner(settings, Database(settings.database_url))
        self.held: list[str] = []
        self.cancelled: list[str] = []

    def submit(self, job_id: str) -> None:
        self.held.append(job_id)

    def cancel(self, job_id: str) -> None:
        self.cancelled.append(job_id)

    def close(self) -> None:
        self.local.close()


def test_cancel_closes_open_pages_and_sticks(db_url: str, tmp_path: Path) -> None:
    settings = settings_for(db_url, tmp_path)
    runner = HeldRunner(settings)
    with running_api(settings, runner) as api:
        client = api.client(api.key("alice"))
        job_id = submit(client, [("a.pdf", pdf(2))]).json()["id"]  # type: ignore[attr-defined]
        cancelled = client.post(f"/v1/jobs/{job_id}/cancel").json()
        assert cancelled["status"] == "cancelled" and cancelled["pages"] == {"failed": 2}
        assert runner.cancelled == [job_id]
        pages = client.get(f"/v1/jobs/{job_id}/pages").json()["items"]
        assert {p["failure_category"] for p in pages} == {"cancelled"}
        assert_problem(client.post(f"/v1/jobs/{job_id}/cancel"), 409, "cancelled")
        assert client.get(f"/v1/jobs/{job_id}/report").json()["pages_failed"] == 2
        runner.local.submit(job_id)  # a late worker must not revive the job
        runner.local.wait(job_id)
        assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"


def test_waiting_jobs_start_by_priority(db_url: str, tmp_path: Path) -> None:
    settings = settings_for(db_url, tmp_path, api_concurrent_jobs=1)
    runner = LocalJobRunner(settings, Database(db_url), start=False)
    with running_api(settings, runner) as api:
        client = api.client(api.key("alice"))
        ids = {
            priority: submit(
                client, [("a.pdf", pdf(1, seed=priority))], priority=str(priority)
            ).json()["id"]  # type: ignore[attr-defined]
            for priority in (0, 9, 5)
        }
        runner.start()  # one thread: the three jobs now run one after another
        for job_id in ids.values():
            runner.wait(job_id, timeout=120)
        with Database(db_url).session() as session:
            started = {p: session.get(Job, i).started_at for p, i in ids.items()}  # type: ignore[union-attr]
    assert sorted(started, key=lambda p: started[p]) == [9, 5, 0]


def test_apikey_cli_creates_lists_and_revokes(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOLIO_DATABASE_URL", api.settings.database_url)
    created = CliRunner().invoke(cli, ["apikey", "create", "ci"])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[-1]
    assert api.client(token).get("/v1/jobs").status_code == 200
    assert CliRunner().invoke(cli, ["apikey", "create", "ci"]).exit_code == 2
    assert "ci" in CliRunner().invoke(cli, ["apikey", "list"]).stdout
    assert token not in CliRunner().invoke(cli, ["apikey", "list"]).stdout
    assert CliRunner().invoke(cli, ["apikey", "revoke", "ci"]).exit_code == 0
    assert_problem(api.client(token).get("/v1/jobs"), 401, "revoked")
