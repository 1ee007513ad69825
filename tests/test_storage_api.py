"""The REST API with an object store: a job named by an s3:// URI (only under the allowed
URIs), results to a prefix or to pre-signed PUT URLs, uploads kept in the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.db.engine import Database
from app.db.models import Document
from app.pdf.samples import born_digital_pdf, page_text
from tests.api_server import running_api, wait_for_job
from tests.test_api import assert_problem, settings_for


def _pdf(pages: int, seed: int) -> bytes:
    return born_digital_pdf([page_text(seed + n) for n in range(pages)])


def test_a_job_from_a_bucket_with_results_to_a_prefix_and_to_presigned_urls(
    sqlite_url: str, s3_server: Any, s3_open_server: Any, bucket: str, tmp_path: Path
) -> None:
    s3: Any = s3_server.client()
    s3.put_object(Bucket=bucket, Key="in/a.pdf", Body=_pdf(2, 0))
    s3.put_object(Bucket=bucket, Key="in/b.pdf", Body=_pdf(1, 5))
    theirs: Any = s3_open_server.client()
    theirs.create_bucket(Bucket="their-bucket")
    urls = {
        name: theirs.generate_presigned_url(
            "put_object", Params={"Bucket": "their-bucket", "Key": f"r/{name}"}, ExpiresIn=600
        )
        for name in ("a.json", "a.md", "summary.json")
    }
    allowed = [f"s3://{bucket}/in/", f"s3://{bucket}/out/"]
    # The other store listens on 127.0.0.1: a loopback address, refused unless allowed.
    settings = settings_for(
        sqlite_url, tmp_path, api_allowed_uris=allowed, result_urls_allow_private=True
    )
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        outside = client.post("/v1/jobs", json={"uri": f"s3://{bucket}/secret/"})
        assert_problem(outside, 403, "allowed URIs")
        sneaky = client.post("/v1/jobs", json={"uri": f"s3://{bucket}/input/"})
        assert_problem(sneaky, 403)  # `in/` allows in/..., not input/
        response = client.post(
            "/v1/jobs", json={"uri": f"s3://{bucket}/in/", "results_uri": f"s3://{bucket}/out/"}
        )
        assert response.status_code == 202, response.text
        to_prefix = response.json()["id"]
        assert wait_for_job(client, to_prefix)["pages"] == {"succeeded": 3}
        presigned = client.post("/v1/jobs", json={"uri": f"s3://{bucket}/in/", "result_urls": urls})
        assert presigned.status_code == 202, presigned.text
        assert wait_for_job(client, presigned.json()["id"])["pages"] == {"succeeded": 3}
    # An API job's results go under its own folder of the results prefix.
    out = f"out/{to_prefix}/"
    summary = json.loads(s3.get_object(Bucket=bucket, Key=f"{out}summary.json")["Body"].read())
    assert summary["pages_succeeded"] == 3
    document = json.loads(s3.get_object(Bucket=bucket, Key=f"{out}b.json")["Body"].read())
    assert document["pages"][0]["text"].strip() == page_text(5).strip()
    sent = theirs.list_objects_v2(Bucket="their-bucket", Prefix="r/")["Contents"]
    assert sorted(o["Key"] for o in sent) == ["r/a.json", "r/a.md", "r/summary.json"]
    their_a = json.loads(theirs.get_object(Bucket="their-bucket", Key="r/a.json")["Body"].read())
    assert [p["number"] for p in their_a["pages"]] == [1, 2]


def test_uploads_go_to_the_store_when_upload_uri_is_set(
    sqlite_url: str, s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    settings = settings_for(sqlite_url, tmp_path, upload_uri=f"s3://{bucket}/uploads/")
    scan = _pdf(2, 0)
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        parts = [("files", ("scan.pdf", scan, "application/pdf"))]
        response = client.post("/v1/jobs", files=parts)
        assert response.status_code == 202, response.text
        job_id = response.json()["id"]
        assert wait_for_job(client, job_id)["pages"] == {"succeeded": 2}
    with Database(sqlite_url).session() as session:
        (path, etag) = session.query(Document.path, Document.etag).one()
    assert path.startswith(f"s3://{bucket}/uploads/") and path.endswith("/scan.pdf") and etag
    stored = s3_server.client().get_object(Bucket=bucket, Key=path.split("/", 3)[3])
    assert stored["Body"].read() == scan
    assert not any((tmp_path / "uploads").glob("*/*.pdf"))  # nothing kept on this disk
