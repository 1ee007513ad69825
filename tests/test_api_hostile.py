"""What the API answers a hostile or careless request over an object store (moto,
tests/s3_server.py): a clear 4xx/503 with no internals, and no job where none should be."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from tests.api_server import free_port, running_api, wait_for_job
from tests.hostile_inputs import good_pdf
from tests.test_api import assert_problem, settings_for


def test_uri_jobs_keep_to_the_limits_and_refuse_an_empty_prefix(
    sqlite_url: str, s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    s3: Any = s3_server.client()
    for n in range(3):  # 9 pages: each file under the 4 pages per file, the job over 8
        s3.put_object(Bucket=bucket, Key=f"in/d{n}.pdf", Body=good_pdf(3, seed=n))
    s3.put_object(Bucket=bucket, Key="small/a.pdf", Body=good_pdf(1))
    allowed = [f"s3://{bucket}/"]
    with running_api(settings_for(sqlite_url, tmp_path, api_allowed_uris=allowed)) as api:
        client = api.client(api.key("alice"))
        too_many = client.post("/v1/jobs", json={"uri": f"s3://{bucket}/in/"})
        assert_problem(too_many, 413, "8 pages")
        for empty in (f"s3://{bucket}/typo/", f"s3://{bucket}/smal"):
            assert_problem(client.post("/v1/jobs", json={"uri": empty}), 422, "no PDF under")
        assert client.get("/v1/jobs").json()["total"] == 0  # no job was made for any of them
        fine = client.post("/v1/jobs", json={"uri": f"s3://{bucket}/small/"})
        assert fine.status_code == 202, fine.text
        job = wait_for_job(client, fine.json()["id"])
    assert job["pages"] == {"succeeded": 1}
    for field in ("created_at", "started_at", "finished_at"):  # RFC 3339: with an offset
        moment = datetime.fromisoformat(str(job[field]))
        assert moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0


def test_a_store_outage_at_submit_is_a_503_without_the_endpoint(
    sqlite_url: str, bucket: str, tmp_path: Path
) -> None:
    port = free_port()  # nothing listens there
    settings = settings_for(
        sqlite_url,
        tmp_path,
        api_allowed_uris=[f"s3://{bucket}/"],
        s3_endpoint_url=f"http://127.0.0.1:{port}",
        storage_timeout_s=2,
    )
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        response = client.post("/v1/jobs", json={"uri": f"s3://{bucket}/in/"})
    assert_problem(response, 503, "unreachable")
    assert str(port) not in response.text and "127.0.0.1" not in response.text


def test_a_deeply_nested_body_is_a_422(sqlite_url: str, tmp_path: Path) -> None:
    with running_api(settings_for(sqlite_url, tmp_path)) as api:
        client = api.client(api.key("alice"))
        for depth in (500, 5_000, 50_000):
            nested = "[" * depth + "]" * depth
            body = '{"folder": "x", "metadata": {"deep": ' + nested + "}}"
            response = client.post(
                "/v1/jobs", content=body, headers={"Content-Type": "application/json"}
            )
            assert_problem(response, 422)
