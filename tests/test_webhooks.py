"""Webhooks over real HTTP: a receiver on loopback, the API on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from app.pdf import samples
from app.settings import Settings
from app.webhooks.outbox import backoff_s
from app.webhooks.signing import HEADER, BadSignature, sign, verify
from app.webhooks.urls import UrlRefused, check_url
from tests.api_server import running_api, wait_for_job
from tests.test_api import assert_problem, settings_for, submit
from tests.webhook_receiver import Receiver, running_receiver

FAST = {"allow_private": True, "first_retry_s": 0.1, "poll_s": 0.1}


def webhook_settings(db_url: str, tmp_path: Path, **webhooks: object) -> Settings:
    return settings_for(db_url, tmp_path, webhooks=FAST | webhooks)


def pdf(pages: int) -> bytes:
    return samples.born_digital_pdf([samples.page_text(n) for n in range(pages)])


def wait_until(check: Callable[[], bool], timeout: float = 120) -> None:
    """Poll until `check` holds (a wait bounded by a generous cap, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.1)


def all_delivered(client: httpx.Client, job_id: str, count: int) -> Callable[[], bool]:
    def check() -> bool:
        rows = client.get(f"/v1/jobs/{job_id}/deliveries").json()
        return len(rows) == count and all(r["status"] == "delivered" for r in rows)

    return check


def events_by_id(receiver: Receiver, secret: str) -> dict[str, dict]:
    """The events the receiver accepted, each signature checked with the key's secret."""
    accepted = {}
    for request in receiver.received:
        verify(secret, request.headers[HEADER], request.body)
        if request.answered == 200:
            event = json.loads(request.body)
            assert request.headers["Folio-Event-Id"] == event["id"]
            accepted[event["id"]] = event
    return accepted


def test_signature_scheme() -> None:
    body = b'{"type":"job.finished"}'
    header = sign("whsec_s", body, timestamp=1_800_000_000)
    assert verify("whsec_s", header, body, now=1_800_000_100) == 1_800_000_000
    with pytest.raises(BadSignature, match="does not match"):
        verify("whsec_other", header, body, now=1_800_000_100)
    with pytest.raises(BadSignature, match="does not match"):
        verify("whsec_s", header, body + b" ", now=1_800_000_100)
    with pytest.raises(BadSignature, match="tolerance"):
        verify("whsec_s", header, body, now=1_800_001_000)


def test_backoff_doubles_up_to_an_hour() -> None:
    assert [backoff_s(n, 10) for n in (1, 2, 3, 4)] == [10, 20, 40, 80]
    assert backoff_s(30, 10) == 3600


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1/jobs",
        "http://localhost/",
        "http://10.1.2.3/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://[64:ff9b::7f00:1]/",  # NAT64 of 127.0.0.1
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of the metadata service
        "http://[64:ff9b:1::a00:1]/",  # local-use NAT64 of 10.0.0.1
        "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
        "http://[2002:c0a8:101::1]/",  # 6to4 of 192.168.1.1
        "http://[::127.0.0.1]/",  # IPv4-compatible 127.0.0.1
        "http://[::ffff:127.0.0.1]/",  # IPv4-mapped
        "ftp://example.com/",
        "http://user:pw@example.com/",
    ],
)
def test_private_and_odd_urls_are_refused(url: str) -> None:
    with pytest.raises(UrlRefused):
        check_url(url, allow_private=False)


@pytest.mark.parametrize("url", ["http://[64:ff9b::808:808]/", "http://[2002:808:808::1]/"])
def test_nat64_and_6to4_of_a_public_address_pass(url: str) -> None:
    check_url(url, allow_private=False)


def test_signed_retried_and_logged(db_url: str, tmp_path: Path) -> None:
    with (
        running_receiver(fail_first=2) as receiver,
        running_api(webhook_settings(db_url, tmp_path)) as api,
    ):
        client = api.client(api.key("alice"))
        secret = client.get("/v1/webhook").json()["secret"]
        job_id = submit(
            client,
            [("a.pdf", pdf(2))],
            callback_url=receiver.url,
            callback_events="page.finished",
            metadata='{"batch": "b7"}',
        ).json()["id"]  # type: ignore[attr-defined]
        wait_until(all_delivered(client, job_id, 3))
        deliveries = client.get(f"/v1/jobs/{job_id}/deliveries").json()
    events = events_by_id(receiver, secret)
    assert sorted(e["type"] for e in events.values()) == [
        "job.finished",
        "page.finished",
        "page.finished",
    ]
    [end] = [e for e in events.values() if e["type"] == "job.finished"]
    assert end["data"]["job"]["pages"] == {"succeeded": 2}
    assert end["data"]["job"]["outcomes"] == {"ok": 2}
    assert end["data"]["job"]["metadata"] == {"batch": "b7"}
    assert end["data"]["job"]["report"]["attempts"] == 2
    tries = [t for d in deliveries for t in d["tries"]]
    assert sorted(t["status_code"] for t in tries) == [200, 200, 200, 503, 503]
    assert all(t["latency_s"] >= 0 for t in tries)
    assert sum(d["attempts"] for d in deliveries) == len(receiver.received) == 5


def test_key_default_webhook_and_isolation(db_url: str, tmp_path: Path) -> None:
    with (
        running_receiver() as receiver,
        running_api(webhook_settings(db_url, tmp_path)) as api,
    ):
        alice = api.client(api.key("alice"))
        config = alice.put("/v1/webhook", json={"url": receiver.url}).json()
        assert config["url"] == receiver.url and config["secret"].startswith("whsec_")
        job_id = submit(alice, [("a.pdf", pdf(1))]).json()["id"]  # type: ignore[attr-defined]
        wait_until(all_delivered(alice, job_id, 1))
        bob = api.client(api.key("bob"))
        assert_problem(bob.get(f"/v1/jobs/{job_id}/deliveries"), 404)
        assert bob.get("/v1/webhook").json()["secret"] != config["secret"]
    [event] = events_by_id(receiver, config["secret"]).values()
    assert event["type"] == "job.finished" and event["data"]["job"]["id"] == job_id


def test_private_callbacks_are_refused_unless_allowed(sqlite_url: str, tmp_path: Path) -> None:
    settings = webhook_settings(sqlite_url, tmp_path, allow_private=False)
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        refused = submit(client, [("a.pdf", pdf(1))], callback_url="http://127.0.0.1:9/admin")
        assert_problem(refused, 422, "non-public address")
        assert_problem(client.put("/v1/webhook", json={"url": "http://10.0.0.7/"}), 422)
        assert_problem(client.put("/v1/webhook", json={"url": "file:///etc/passwd"}), 422)


def test_a_restart_in_the_middle_of_deliveries_loses_none(db_url: str, tmp_path: Path) -> None:
    settings = webhook_settings(db_url, tmp_path)
    with running_receiver(always=500) as receiver:
        with running_api(settings) as api:
            token = api.key("alice")
            client = api.client(token)
            secret = client.get("/v1/webhook").json()["secret"]
            job_id = submit(
                client,
                [("a.pdf", pdf(3))],
                callback_url=receiver.url,
                callback_events="page.finished",
            ).json()["id"]  # type: ignore[attr-defined]
            assert wait_for_job(client, job_id)["status"] == "done"
            wait_until(lambda: len({r.body for r in receiver.received}) == 4)
        # The server is gone with every delivery still pending; the receiver recovers.
        refused = len(receiver.received)
        receiver.always = None
        with running_api(settings) as api:
            client = api.client(token)
            wait_until(all_delivered(client, job_id, 4))
            deliveries = client.get(f"/v1/jobs/{job_id}/deliveries").json()
    events = events_by_id(receiver, secret)
    assert sorted(e["type"] for e in events.values()) == ["job.finished"] + ["page.finished"] * 3
    assert {r.answered for r in receiver.received[:refused]} == {500}
    for delivery in deliveries:  # each was refused before the restart, delivered after it
        codes = [t["status_code"] for t in delivery["tries"]]
        assert codes[0] == 500 and codes[-1] == 200 and codes.count(200) == 1
