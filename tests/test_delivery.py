"""Delivery is part of done: an API job run without a broker whose results cannot be sent
(a refused pre-signed URL, an unreachable host) reads `undelivered` with why, is tried again
with backoff, and is sent when the server starts again. Real HTTP: the API (uvicorn) and a
second S3 API server (moto, tests/s3_server.py) that owns the caller's bucket."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.api_server import free_port, running_api, wait_for_job
from tests.hostile_inputs import good_pdf
from tests.test_api import settings_for
from tests.test_webhooks import FAST, all_delivered, wait_until
from tests.webhook_receiver import running_receiver


def _presigned(theirs: Any, bucket: str, key: str) -> str:
    return str(
        theirs.generate_presigned_url(
            "put_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=600
        )
    )


def test_a_refused_target_leaves_the_job_undelivered_until_it_is_sent(
    sqlite_url: str, s3_server: Any, s3_open_server: Any, bucket: str, tmp_path: Path
) -> None:
    s3_server.client().put_object(Bucket=bucket, Key="in/a.pdf", Body=good_pdf(1, seed=2))
    theirs: Any = s3_open_server.client()
    urls = {name: _presigned(theirs, "later-bucket", name) for name in ("a.md", "summary.json")}
    settings = settings_for(
        sqlite_url,
        tmp_path,
        api_allowed_uris=[f"s3://{bucket}/in/"],
        result_urls_allow_private=True,  # the other store listens on 127.0.0.1
        webhooks=FAST,
    )
    with running_receiver() as receiver, running_api(settings) as api:
        token = api.key("alice")
        client = api.client(token)
        body = {"uri": f"s3://{bucket}/in/", "result_urls": urls, "callback_url": receiver.url}
        response = client.post("/v1/jobs", json=body)
        assert response.status_code == 202, response.text
        job = wait_for_job(client, response.json()["id"])
        wait_until(all_delivered(client, str(job["id"]), 1))
    [told] = [json.loads(r.body) for r in receiver.received]
    assert told["type"] == "job.undelivered"
    assert told["data"]["job"]["delivery"]["category"] == "result_url_refused"
    assert job["status"] == "undelivered"  # its bucket does not exist yet: a 404 to the PUT
    delivery = job["options"]["delivery"]  # type: ignore[index]
    assert (delivery["status"], delivery["category"], delivery["tries"]) == (
        "failed",
        "result_url_refused",
        1,  # a refusal is not tried again
    )
    theirs.create_bucket(Bucket="later-bucket")
    with running_api(settings) as api:  # a new start takes it up again
        again = wait_for_job(api.client(token), str(job["id"]))
    assert again["status"] == "done"
    assert again["options"]["delivery"]["status"] == "delivered"  # type: ignore[index]
    sent = theirs.list_objects_v2(Bucket="later-bucket")["Contents"]
    assert sorted(o["Key"] for o in sent) == ["a.md", "summary.json"]


def test_an_unreachable_target_is_tried_again_with_backoff(
    sqlite_url: str, s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    s3_server.client().put_object(Bucket=bucket, Key="in/a.pdf", Body=good_pdf(1))
    closed = f"http://127.0.0.1:{free_port()}/a.md"  # nothing listens there
    settings = settings_for(
        sqlite_url,
        tmp_path,
        api_allowed_uris=[f"s3://{bucket}/in/"],
        result_urls_allow_private=True,
        delivery_retries=2,
        delivery_retry_s=0.01,
    )
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        body = {"uri": f"s3://{bucket}/in/", "result_urls": {"a.md": closed}}
        response = client.post("/v1/jobs", json=body)
        assert response.status_code == 202, response.text
        job = wait_for_job(client, response.json()["id"])
        listed = client.get("/v1/jobs", params={"status": "undelivered"}).json()
    assert job["status"] == "undelivered"
    delivery = job["options"]["delivery"]  # type: ignore[index]
    assert (delivery["category"], delivery["tries"]) == ("store_unavailable", 3)
    assert [j["id"] for j in listed["items"]] == [job["id"]]
