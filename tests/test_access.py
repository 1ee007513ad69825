"""What a caller may touch, reached as a caller reaches it: the REST API against a real S3 API
server (moto, tests/s3_server.py). Every URI a job reads or writes passes one check
(app/storage/access.py): the request's, each line of a manifest, the results prefix; pre-signed
result URLs and callbacks are refused for private and loopback addresses unless allowed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.storage import Stores
from app.storage.access import AccessPolicy, PlaceRefused, listing_prefix
from app.storage.listing import listed_pages
from app.storage.options import S3Options
from tests.api_server import running_api, wait_for_job
from tests.hostile_inputs import good_pdf
from tests.test_api import assert_problem, settings_for


def _documents(client: Any, job_id: str) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in client.get(f"/v1/jobs/{job_id}/documents").json()}


def test_a_manifest_reads_only_what_the_server_allows(
    sqlite_url: str, s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    s3: Any = s3_server.client()
    s3.put_object(Bucket=bucket, Key="in/a.pdf", Body=good_pdf(1, seed=1))
    s3.put_object(Bucket=bucket, Key="secret/payroll.pdf", Body=good_pdf(1, seed=7))
    s3.put_object(Bucket=bucket, Key="in-private/b.pdf", Body=good_pdf(1, seed=9))
    inside, payroll = f"s3://{bucket}/in/a.pdf", f"s3://{bucket}/secret/payroll.pdf"
    sibling, missing = f"s3://{bucket}/in-private/b.pdf", f"s3://{bucket}/secret/none.pdf"
    elsewhere = "s3://folio-no-such-bucket/x.pdf"
    lines = [inside, payroll, sibling, missing, elsewhere, inside]  # the last one twice
    s3.put_object(Bucket=bucket, Key="in/list.txt", Body="\n".join(lines).encode())
    allowed = [f"s3://{bucket}/in", f"s3://{bucket}/out/"]  # `in` without its slash
    with running_api(settings_for(sqlite_url, tmp_path, api_allowed_uris=allowed)) as api:
        client = api.client(api.key("alice"))
        response = client.post(
            "/v1/jobs",
            json={"uri": f"s3://{bucket}/in/list.txt", "results_uri": f"s3://{bucket}/out/"},
        )
        assert response.status_code == 202, response.text
        job = wait_for_job(client, response.json()["id"])
        documents = _documents(client, job["id"])
    assert job["pages"] == {"succeeded": 1}
    outside = ["secret__payroll", "in-private__b", "secret__none", "x"]  # each key flattened
    assert sorted(documents) == sorted(["in__a", *outside])  # `in/a.pdf` once
    assert documents["in__a"]["status"] == "done"
    # Outside the allowed URIs: one category whether the object exists or not, and the
    # store was never asked (a missing key or bucket would say so otherwise).
    for name in outside:
        assert documents[name]["status"] == "failed"
        assert documents[name]["error_category"] == "not_allowed", documents[name]
    written = s3.list_objects_v2(Bucket=bucket, Prefix="out/")["Contents"]
    texts = b"".join(s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in written)
    assert b"Section 1" in texts  # a's text went out, and nothing of the others'
    assert b"Section 7" not in texts and b"Section 9" not in texts
    summary = next(o["Key"] for o in written if o["Key"].endswith("summary.json"))
    body = json.loads(s3.get_object(Bucket=bucket, Key=summary)["Body"].read())
    assert body["documents_total"] == 5 and body["pages_succeeded"] == 1


def test_an_allowed_prefix_without_its_slash_admits_no_sibling(
    sqlite_url: str, s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    s3: Any = s3_server.client()
    s3.put_object(Bucket=bucket, Key="docs/a.pdf", Body=good_pdf(1, seed=2))
    s3.put_object(Bucket=bucket, Key="docs-private/p.pdf", Body=good_pdf(1, seed=3))
    s3.put_object(Bucket=bucket, Key="docs.pdf", Body=good_pdf(1, seed=4))
    allowed = [f"s3://{bucket}/docs"]
    with running_api(settings_for(sqlite_url, tmp_path, api_allowed_uris=allowed)) as api:
        client = api.client(api.key("alice"))
        refused = client.post("/v1/jobs", json={"uri": f"s3://{bucket}/docs-private/"})
        assert_problem(refused, 403, "allowed URIs")
        response = client.post("/v1/jobs", json={"uri": f"s3://{bucket}/docs"})
        assert response.status_code == 202, response.text
        job = wait_for_job(client, response.json()["id"])
        documents = _documents(client, job["id"])
    assert sorted(documents) == ["a"]
    assert job["pages"] == {"succeeded": 1}


PRIVATE_URLS = [
    "http://127.0.0.1:9/put",
    "http://localhost/put",
    "http://10.0.0.8/put",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]/put",
    "ftp://example.com/put",
    "http://user:pw@example.com/put",
]


def test_result_urls_to_private_addresses_are_refused(
    sqlite_url: str, s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    s3_server.client().put_object(Bucket=bucket, Key="in/a.pdf", Body=good_pdf(1))
    allowed = [f"s3://{bucket}/in/"]
    with running_api(settings_for(sqlite_url, tmp_path, api_allowed_uris=allowed)) as api:
        client = api.client(api.key("alice"))
        for url in PRIVATE_URLS:
            body = {"uri": f"s3://{bucket}/in/", "result_urls": {"a.md": url}}
            assert_problem(client.post("/v1/jobs", json=body), 422, "result_urls['a.md']")
        assert client.get("/v1/jobs").json()["total"] == 0  # no job was made


def test_result_urls_recheck_the_address_when_they_are_sent(
    sqlite_url: str, s3_server: Any, s3_open_server: Any, bucket: str, tmp_path: Path
) -> None:
    """A job taken while private addresses were allowed, run by a server that no longer
    allows them: the PUT is refused at delivery too (a name may resolve elsewhere later)."""
    from app.db.engine import Database
    from app.jobs import publish_job

    s3_server.client().put_object(Bucket=bucket, Key="in/a.pdf", Body=good_pdf(1))
    theirs: Any = s3_open_server.client()
    theirs.create_bucket(Bucket="their-late-bucket")
    url = theirs.generate_presigned_url(
        "put_object", Params={"Bucket": "their-late-bucket", "Key": "a.md"}, ExpiresIn=600
    )
    allowed = [f"s3://{bucket}/in/"]
    lax = settings_for(
        sqlite_url, tmp_path, api_allowed_uris=allowed, result_urls_allow_private=True
    )
    with running_api(lax) as api:
        client = api.client(api.key("alice"))
        body = {"uri": f"s3://{bucket}/in/", "result_urls": {"a.md": url}}
        response = client.post("/v1/jobs", json=body)
        assert response.status_code == 202, response.text
        wait_for_job(client, response.json()["id"])
    assert "Contents" in theirs.list_objects_v2(Bucket="their-late-bucket")
    theirs.delete_object(Bucket="their-late-bucket", Key="a.md")
    strict = settings_for(sqlite_url, tmp_path, api_allowed_uris=allowed)
    from app.errors import ObjectRefused

    with pytest.raises(ObjectRefused, match="non-public address"):
        publish_job(strict, Database(sqlite_url), response.json()["id"])
    assert "Contents" not in theirs.list_objects_v2(Bucket="their-late-bucket")


@pytest.mark.parametrize(
    ("allowed", "uri", "admitted"),
    [
        ("s3://b/docs", "s3://b/docs", True),
        ("s3://b/docs", "s3://b/docs/a.pdf", True),
        ("s3://b/docs", "s3://b/docs-private/a.pdf", False),
        ("s3://b/docs", "s3://b/docs.pdf", False),
        ("s3://b/docs/", "s3://b/docs", True),
        ("s3://b/", "s3://b/anything/a.pdf", True),
        ("s3://b", "s3://bb/a.pdf", False),
        ("s3://b/docs/a.pdf", "s3://b/docs/a.pdf.old/x.pdf", False),
        ("s3://b/docs", "/etc/passwd", False),
        ("s3://b/docs", "s3://b/docs/../secret/a.pdf", False),
        ("s3://b/docs", "s3://b/docs/./a.pdf", False),
        ("s3://b/docs", "s3://b/docs/a..pdf", True),
    ],
)
def test_prefixes_are_compared_as_path_segments(allowed: str, uri: str, admitted: bool) -> None:
    assert AccessPolicy.of([allowed]).admits(uri) is admitted


def test_a_prefix_is_listed_as_a_folder_and_a_pdf_as_itself() -> None:
    assert listing_prefix("s3://b/docs") == "s3://b/docs/"
    assert listing_prefix("s3://b/docs/") == "s3://b/docs/"
    assert listing_prefix("s3://b/docs/a.PDF") == "s3://b/docs/a.PDF"
    assert listing_prefix("s3://b/") == "s3://b/"


def test_two_keys_sharing_a_results_prefix_never_touch_each_others_results(
    sqlite_url: str, s3_server: Any, bucket: str, tmp_path: Path
) -> None:
    """Each API job writes under `<results_uri>/<job id>/`; a rerun skips only what the same
    key did, so another key's job id is never seen."""
    s3: Any = s3_server.client()
    s3.put_object(Bucket=bucket, Key="in/a.pdf", Body=good_pdf(1, seed=41))
    s3.put_object(Bucket=bucket, Key="out/a.md", Body=b"the caller's own notes")
    allowed = [f"s3://{bucket}/in/", f"s3://{bucket}/out/"]
    body = {"uri": f"s3://{bucket}/in/", "results_uri": f"s3://{bucket}/out/"}
    with running_api(settings_for(sqlite_url, tmp_path, api_allowed_uris=allowed)) as api:
        alice, bob = api.client(api.key("alice")), api.client(api.key("bob"))
        first = wait_for_job(alice, alice.post("/v1/jobs", json=body).json()["id"])
        theirs = wait_for_job(bob, bob.post("/v1/jobs", json=body).json()["id"])
        again = wait_for_job(alice, alice.post("/v1/jobs", json=body).json()["id"])
        bobs_docs = bob.get(f"/v1/jobs/{theirs['id']}/documents").json()
    assert first["status"] == theirs["status"] == again["status"] == "done"
    assert [d["status"] for d in bobs_docs] == ["done"]  # not skipped for alice's job

    def read(key: str) -> bytes:
        return bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())

    assert read("out/a.md") == b"the caller's own notes"
    bob_summary = json.loads(read(f"out/{theirs['id']}/summary.json"))
    assert first["id"] not in json.dumps(bob_summary)
    assert bob_summary["documents_done"] == 1 and "rerun_note" not in bob_summary
    rerun = json.loads(read(f"out/{again['id']}/summary.json"))
    assert rerun["documents_skipped"] == 1 and first["id"] in rerun["rerun_note"]
    assert "Section 41" in read(f"out/{again['id']}/a.md").decode()  # whole in its own folder
    assert "Section 41" in read(f"out/{first['id']}/a.md").decode()


def test_a_listing_outside_the_policy_is_refused_before_the_store_is_asked(
    tmp_path: Path,
) -> None:
    # No store listens there: an answer of any kind would be a connection error instead.
    stores = Stores(S3Options("http://127.0.0.1:9", timeout_s=1))
    policy = AccessPolicy.of(["s3://b/in/"])
    (tmp_path / "list.txt").write_text("s3://b/in/a.pdf\n")
    for source in ("s3://b/secret/list.txt", "s3://b/in/../secret/", str(tmp_path / "list.txt")):
        with pytest.raises(PlaceRefused):
            next(iter(listed_pages(stores, source, 10, policy)))
