"""Several machines, nothing shared but PostgreSQL, Redis and a bucket: real `folio worker`
processes with data folders of their own read every document from a real S3 API server
process (moto's, tests/s3_server.py) and write the results back to it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from app.cli.main import app
from app.db.models import Document, Page
from tests.conftest import REDIS_URL
from tests.distributed_support import (
    TcpProxy,
    page_text,
    start_slow_worker,
    start_worker,
    stop_worker,
    wait_until,
    worker_env,
    write_text_pdfs,
)
from tests.s3_server import DENIED_PREFIX
from tests.test_distributed import Batch

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
MAX_FILE_MB = "0.02"  # 20 KiB: the test's PDFs are ~1 KiB, its huge object 64 KiB


def _upload_folder(s3: Any, bucket: str, folder: Path, prefix: str) -> None:
    for path in sorted(folder.iterdir()):
        s3.put_object(Bucket=bucket, Key=f"{prefix}{path.name}", Body=path.read_bytes())


def _submit(source: str, out: str, env: dict[str, str], mp: pytest.MonkeyPatch) -> str:
    """`folio submit` in this process (the submitting machine), with its own data folder."""
    for key, value in env.items():
        if key.startswith("FOLIO_"):
            mp.setenv(key, value)
    result = CliRunner().invoke(app, ["submit", source, "--out", out])
    assert result.exit_code == 0, result.output
    return result.stdout.strip().splitlines()[-1]


def _json(s3: Any, bucket: str, key: str) -> Any:
    return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())


def _keys(s3: Any, bucket: str, prefix: str) -> list[str]:
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"][len(prefix) :] for o in listed.get("Contents", []))


def test_bad_objects_fail_alone_with_their_reason_and_the_job_runs_on(
    postgres_url: str,
    prefix: str,
    bucket: str,
    s3_server: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s3: Any = s3_server.client()
    write_text_pdfs(tmp_path / "pdfs", documents=3, pages=2)
    _upload_folder(s3, bucket, tmp_path / "pdfs", "in/")
    s3.put_object(Bucket=bucket, Key="in/notes.pdf", Body=b"just some text, not a PDF\n" * 4)
    s3.put_object(Bucket=bucket, Key="in/corrupt.pdf", Body=b"%PDF-1.7\n" + b"\x00garbage" * 50)
    s3.put_object(Bucket=bucket, Key="in/huge.pdf", Body=b"%PDF-1.7\n" + b"0" * 64 * 1024)
    s3.put_object(Bucket=bucket, Key=f"in/{DENIED_PREFIX}secret.pdf", Body=b"%PDF-1.7\n")
    names = ["doc01", "doc02", "doc03", "notes", "corrupt", "huge", f"{DENIED_PREFIX}secret"]
    manifest = [f"s3://{bucket}/in/{n}.pdf" for n in names]
    manifest += [f"s3://{bucket}/in/missing.pdf", "s3://folio-no-such-bucket/in/a.pdf"]
    s3.put_object(Bucket=bucket, Key="manifest.txt", Body="\n".join(manifest).encode())

    env = worker_env(postgres_url, REDIS_URL, prefix, FOLIO_MAX_FILE_MB=MAX_FILE_MB)
    submitter = {**env, "FOLIO_DATA_DIR": str(tmp_path / "submitter")}
    job_id = _submit(f"s3://{bucket}/manifest.txt", f"s3://{bucket}/out/", submitter, monkeypatch)
    shutil.rmtree(tmp_path / "submitter")  # nothing the submitter wrote is there for a worker
    # Changed after it was listed (and counted), before any worker read it.
    s3.put_object(Bucket=bucket, Key="in/doc03.pdf", Body=b"%PDF-1.7\n%changed\n" * 3)

    batch = Batch(postgres_url, job_id, pages=6)
    worker = start_worker(
        {**env, "FOLIO_DATA_DIR": str(tmp_path / "worker")}, 2, log=tmp_path / "worker.log"
    )
    try:
        wait_until(batch.done, 120, "the job to finish", batch.describe)
    finally:
        stop_worker(worker)

    with batch.db.session() as session:
        documents = {
            d.name: (d.status, d.error_category, d.error)
            for d in session.scalars(select(Document).where(Document.job_id == job_id))
        }
        changed = session.execute(
            select(Page.status, Page.failure_category, Page.error)
            .join(Document)
            .where(Document.name == "in__doc03", Document.job_id == job_id)
        ).all()
    assert {name: (status, category) for name, (status, category, _) in documents.items()} == {
        "in__doc01": ("done", None),
        "in__doc02": ("done", None),
        "in__doc03": ("failed", "object_changed"),  # failed on the worker, see below
        "in__notes": ("failed", "not_pdf"),
        "in__corrupt": ("failed", "corrupt"),
        "in__huge": ("failed", "too_large"),
        "in__denied__secret": ("failed", "access_denied"),
        "in__missing": ("failed", "object_missing"),
        "in__a": ("failed", "bucket_missing"),
    }
    assert "does not exist" in documents["in__a"][2]
    assert "denied" in documents["in__denied__secret"][2]
    # doc03's pages fail on the worker, each with why; nothing else of the job does.
    assert [(s, c) for s, c, _ in changed] == [("failed", "object_changed")] * 2
    assert "changed since it was listed" in changed[0][2]

    summary = _json(s3, bucket, "out/summary.json")
    assert summary["pages_succeeded"] == 4 and summary["documents_done"] == 2
    assert summary["documents_failed"] == 7
    doc = _json(s3, bucket, "out/in__doc01.json")
    assert [p["text"].strip() for p in doc["pages"]] == [page_text(1, 1), page_text(1, 2)]
    assert {"in__doc01.md", "in__doc02.md", "report.json", "summary.json"} <= set(
        _keys(s3, bucket, "out/")
    )


def test_the_store_stopped_mid_batch_loses_no_page_and_duplicates_no_result(
    postgres_url: str,
    prefix: str,
    bucket: str,
    s3_server: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s3: Any = s3_server.client()
    pages = write_text_pdfs(tmp_path / "pdfs", documents=6, pages=4)
    _upload_folder(s3, bucket, tmp_path / "pdfs", "in/")
    # The workers reach the store through a proxy that the test stops and starts again: to
    # them it is the server going away (moto keeps its objects in memory, so the process
    # itself cannot be restarted with them).
    proxy = TcpProxy(("127.0.0.1", s3_server.port))
    proxy.start()
    env = worker_env(
        postgres_url,
        REDIS_URL,
        prefix,
        FOLIO_STORAGE_RETRIES="1",
        FOLIO_STORAGE_RETRY_MAX_DELAY_S="0.5",
        FOLIO_DB_RETRY_MAX_DELAY_S="1",
        FOLIO_STORAGE_TIMEOUT_S="5",
    )
    submitter = {**env, "FOLIO_DATA_DIR": str(tmp_path / "submitter")}
    source, out = f"s3://{bucket}/in/", f"s3://{bucket}/out/"
    job_id = _submit(source, out, submitter, monkeypatch)
    batch = Batch(postgres_url, job_id, pages)
    worker_side = {
        **env,
        "FOLIO_DATA_DIR": str(tmp_path / "worker"),
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{proxy.port}",
    }
    log = tmp_path / "worker.log"
    # One page at a time, 0.2 s each: documents 2-6 are read from the store only after the
    # first page of document 1 is done, so the outage below comes before their reads.
    worker = start_slow_worker(worker_side, 0.2, concurrency=1, log=log)
    try:
        wait_until(lambda: batch.count("succeeded") >= 1, 120, "a first page")
        proxy.pause()
        assert batch.count("pending", "running") > 0, "the batch ended before the outage"
        wait_until(
            lambda: "waits for the object store" in log.read_text(errors="replace"),
            120,
            "a page to wait for the store",
        )
        assert batch.count("failed") == 0
        proxy.start()
        wait_until(batch.done, 180, "the job to finish after the store came back", batch.describe)
        assert "summary.json" in _keys(s3, bucket, "out/")  # sent before the job reads done
        batch.assert_every_page_done_once()  # (before the rerun adds skipped documents)
        # A rerun skips every object done with the same ETag into the same prefix, unread.
        rerun = Batch(postgres_url, _submit(source, out, submitter, monkeypatch), 0)
        wait_until(rerun.done, 120, "the rerun to finish", rerun.describe)
    finally:
        stop_worker(worker)
        proxy.pause()
    with rerun.db.session() as session:
        statuses = session.scalars(select(Document.status).where(Document.job_id == rerun.job_id))
        assert list(statuses) == ["skipped"] * 6
    assert _json(s3, bucket, "out/summary.json")["job_id"] == rerun.job_id
    names = [f"doc{d:02d}" for d in range(1, 7)]
    expected = sorted([f"{n}.json" for n in names] + [f"{n}.md" for n in names])
    assert _keys(s3, bucket, "out/") == sorted([*expected, "report.json", "summary.json"])
    for d, name in enumerate(names, start=1):
        document = _json(s3, bucket, f"out/{name}.json")
        assert [p["number"] for p in document["pages"]] == [1, 2, 3, 4]
        assert document["pages"][3]["text"].strip() == page_text(d, 4)
