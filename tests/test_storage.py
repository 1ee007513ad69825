"""The storage seam against a real S3 API server process (moto's server mode, tests/s3_server.py):
paged listing, refusals with their categories, the bounded checksummed cache, and `folio run`
from a bucket to a bucket with reruns that skip what is done."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.db.models import Job
from app.errors import ObjectRefused, StoreUnavailable
from app.storage import DocumentCache, StoredObject, Stores
from app.storage.options import CacheOptions, S3Options
from tests.distributed_support import TcpProxy, page_text, write_text_pdfs
from tests.s3_server import DENIED_PREFIX


def _upload(s3_server: Any, bucket: str, folder: Path, prefix: str) -> list[str]:
    client: Any = s3_server.client()
    keys = []
    for path in sorted(folder.iterdir()):
        key = f"{prefix}{path.name}"
        client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
        keys.append(key)
    return keys


def _get(s3_server: Any, bucket: str, key: str) -> bytes:
    client: Any = s3_server.client()
    return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())


def test_listing_comes_a_page_at_a_time_and_only_pdfs(s3_server: Any, bucket: str) -> None:
    client: Any = s3_server.client()
    for n in range(5):
        client.put_object(Bucket=bucket, Key=f"in/sub/d{n}.pdf", Body=b"%PDF-1.4")
    client.put_object(Bucket=bucket, Key="in/notes.txt", Body=b"x")
    client.put_object(Bucket=bucket, Key="other/d9.pdf", Body=b"%PDF-1.4")
    pages = list(Stores().for_uri("s3://").list_pages(f"s3://{bucket}/in/", page_size=2))
    # in/notes.txt shares the first listing page of 2 keys, and is left out of it
    assert [len(p) for p in pages] == [1, 2, 2]
    uris = [o.uri for p in pages for o in p]
    assert uris == [f"s3://{bucket}/in/sub/d{n}.pdf" for n in range(5)]
    assert all(o.etag and o.size == 8 for p in pages for o in p)


def test_refusals_say_what_is_wrong(s3_server: Any, bucket: str) -> None:
    client: Any = s3_server.client()
    client.put_object(Bucket=bucket, Key=f"{DENIED_PREFIX}a.pdf", Body=b"%PDF-1.4 secret")
    client.put_object(Bucket=bucket, Key="ok.pdf", Body=b"%PDF-1.4 " + b"x" * 100)
    store = Stores().for_uri("s3://")
    cases = {
        f"s3://{bucket}/missing.pdf": "object_missing",
        "s3://folio-no-such-bucket/a.pdf": "bucket_missing",
        f"s3://{bucket}/{DENIED_PREFIX}a.pdf": "access_denied",
    }
    for uri, category in cases.items():
        with pytest.raises(ObjectRefused) as refused:
            store.read(StoredObject(uri, 0), io.BytesIO(), 2**20)
        assert refused.value.category == category, uri
        assert uri.split("/")[-1] in refused.value.reason or category == "bucket_missing"
    listed = store.head(f"s3://{bucket}/ok.pdf")
    with pytest.raises(ObjectRefused) as refused:
        store.read(listed, io.BytesIO(), 50)
    assert refused.value.category == "too_large"
    client.put_object(Bucket=bucket, Key="ok.pdf", Body=b"%PDF-1.4 changed")
    with pytest.raises(ObjectRefused) as refused:
        store.read(listed, io.BytesIO(), 2**20)
    assert refused.value.category == "object_changed"


def test_cache_fetches_once_checks_the_checksum_and_stays_under_its_cap(
    s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    client: Any = s3_server.client()
    for n in range(4):
        client.put_object(Bucket=bucket, Key=f"d{n}.pdf", Body=bytes([n]) * 1000)
    store = Stores().for_uri("s3://")
    cache = DocumentCache(Stores(), CacheOptions(tmp_path / "cache", 2500, 2**20), pinned=1)
    listed = [store.head(f"s3://{bucket}/d{n}.pdf") for n in range(4)]
    first = cache.local_path(listed[0])
    assert first.read_bytes() == bytes([0]) * 1000
    first_mtime = first.stat().st_mtime_ns
    assert cache.local_path(listed[0]) == first  # the same copy, not a second fetch
    for stored in listed[1:]:
        cache.local_path(stored)
    copies = list((tmp_path / "cache").glob("*.pdf"))
    assert sum(p.stat().st_size for p in copies) <= 2500 and len(copies) == 2
    assert not list((tmp_path / "cache").glob("*.part"))
    with pytest.raises(ObjectRefused) as refused:
        cache.local_path(listed[0], sha256="0" * 64)  # evicted; fetched again, hash differs
    assert refused.value.category == "object_changed"
    assert first_mtime  # the first copy existed before eviction


def test_a_store_that_stays_down_is_retried_with_backoff_then_reported(
    s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    s3_server.client().put_object(Bucket=bucket, Key="a.pdf", Body=b"%PDF-1.4")
    proxy = TcpProxy(("127.0.0.1", s3_server.port))
    proxy.start()
    stores = Stores(S3Options(f"http://127.0.0.1:{proxy.port}", timeout_s=5))
    listed = stores.for_uri("s3://").head(f"s3://{bucket}/a.pdf")
    proxy.pause()  # the server is gone, as far as Folio can tell
    waits: list[float] = []
    cache = DocumentCache(
        stores, CacheOptions(tmp_path, 2**20, 2**20, retries=3), sleep=waits.append
    )
    with pytest.raises(StoreUnavailable):
        cache.local_path(listed)
    assert len(waits) == 3 and waits[0] < waits[1] < waits[2]  # backed off, three times
    proxy.start()
    assert cache.local_path(listed).read_bytes() == b"%PDF-1.4"


def test_folio_run_from_a_bucket_to_a_bucket_and_reruns_skip_what_is_done(
    s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    write_text_pdfs(tmp_path / "pdfs", documents=3, pages=2)
    _upload(s3_server, bucket, tmp_path / "pdfs", "in/")
    runner = CliRunner()
    args = ["run", f"s3://{bucket}/in/", "--out", f"s3://{bucket}/out/", "--engine", "textlayer"]
    first = runner.invoke(app, [*args, "--concurrency", "2"])
    assert first.exit_code == 0, first.output
    summary = json.loads(_get(s3_server, bucket, "out/summary.json"))
    assert (summary["documents_done"], summary["pages_succeeded"]) == (3, 6)
    document = json.loads(_get(s3_server, bucket, "out/doc02.json"))
    assert document["path"] == f"s3://{bucket}/in/doc02.pdf"
    assert [p["number"] for p in document["pages"]] == [1, 2]
    assert document["pages"][1]["text"].strip() == page_text(2, 2)
    assert document["pages"][0]["positions"]["words"]  # boxes: no second conversion needed
    markdown = _get(s3_server, bucket, "out/doc01.md").decode()
    assert page_text(1, 2) in markdown
    report = json.loads(_get(s3_server, bucket, "out/report.json"))
    assert report["job_id"] == summary["job_id"]
    again_out = runner.invoke(app, ["results", summary["job_id"], "--out", f"s3://{bucket}/a/"])
    assert again_out.exit_code == 0, again_out.output
    assert _get(s3_server, bucket, "a/doc01.md").decode() == markdown

    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "Nothing to do: 3 documents already done" in again.output

    write_text_pdfs(tmp_path / "changed", documents=1, pages=3)
    _upload(s3_server, bucket, tmp_path / "changed", "in/")  # doc01.pdf, new content
    third = runner.invoke(app, args)
    assert third.exit_code == 0, third.output
    summary = json.loads(_get(s3_server, bucket, "out/summary.json"))
    assert (summary["documents_skipped"], summary["pages_total"]) == (2, 7)


def test_a_prefix_that_cannot_be_listed_refuses_the_run_and_makes_no_job(
    s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    database = f"sqlite:///{tmp_path / 'folio.db'}"
    missing = "s3://folio-no-such-bucket/in/"
    result = CliRunner().invoke(app, ["run", missing, "--database-url", database])
    assert result.exit_code == 4, result.output
    assert "does not exist" in result.output
    with Database(database).session() as session:
        assert session.query(Job).count() == 0
