"""Calls to URLs a caller gave are bounded by construction (issue 62, defects 1-3): a reply
is read a few KiB and closed, every call has one total deadline, a name is resolved once, and
a receiver that drips its reply holds no other receiver's webhooks. Real HTTP throughout:
the hostile servers of tests/hostile_servers.py on loopback, the API (uvicorn) on SQLite."""

from __future__ import annotations

import json
import socket
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.errors import StoreUnavailable
from app.outbound.calls import REPLY_CAP, Call, CallFailed, call_blocking
from app.servermetrics.counters import MAX_METRICS_BYTES, ServerMetricsUnavailable, read_counters
from app.storage.targets import PresignedTarget
from tests.api_server import running_api
from tests.hostile_servers import Log, hostile_server
from tests.test_api import settings_for, submit
from tests.test_webhooks import FAST, all_delivered, pdf, wait_until

FLOOD = 128 * 2**20  # a reply this large was read whole into memory
# What the loopback's socket buffers may hold before the sender blocks (tcp_wmem + tcp_rmem
# at their Linux maxima, ~10 MiB): a client that read a few KiB and closed let no more out.
BUFFERED = 32 * 2**20


def test_a_flooding_webhook_receiver_is_read_a_few_kib(sqlite_url: str, tmp_path: Path) -> None:
    settings = settings_for(sqlite_url, tmp_path, webhooks=FAST)
    with (
        hostile_server("flood", "flood", size=FLOOD) as receiver,
        running_api(settings) as api,
    ):
        client = api.client(api.key("alice"))
        job_id = submit(client, [("a.pdf", pdf(1))], callback_url=receiver.url).json()["id"]  # type: ignore[attr-defined]
        wait_until(all_delivered(client, job_id, 1))
        wait_until(lambda: receiver.log.count("flood", "ended") == 1)
    assert len(receiver.sent) == 1 and receiver.sent[0] < BUFFERED  # not the 128 MiB
    event = json.loads(receiver.bodies[0])
    for field in ("created_at", "finished_at"):  # RFC 3339 with the offset the docs promise
        moment = datetime.fromisoformat(event["data"]["job"][field])
        assert moment.utcoffset() == timedelta(0)


def test_a_flooding_result_url_is_read_a_few_kib() -> None:
    with hostile_server("flood", "flood", size=FLOOD) as store:
        target = PresignedTarget({"a.md": store.url}, timeout_s=60, allow_private=True)
        target.put("a.md", b"# a\n", "text/markdown")
        wait_until(lambda: store.log.count("flood", "ended") == 1)
    assert store.bodies == [b"# a\n"] and store.sent[0] < BUFFERED


@pytest.mark.parametrize("mode", ["drip", "cut"])
def test_a_result_url_whose_reply_fails_is_not_delivered(mode: str) -> None:
    """A reply dripped past the deadline (1,000 bytes at 20 a second: 50 s, the deadline 1 s)
    or cut short of its length is an outage, not a delivery: the job is tried again."""
    with hostile_server("put", mode, size=1000, interval_s=0.05) as store:
        target = PresignedTarget({"a.md": store.url}, timeout_s=1, allow_private=True)
        with pytest.raises(StoreUnavailable, match=r"PUT of a\.md failed"):
            target.put("a.md", b"# a\n", "text/markdown")
        wait_until(lambda: store.log.count("put", "ended") == 1)
    assert store.sent[0] < 1000  # cut off by the deadline, not read to the end


def test_a_reply_is_kept_to_its_head() -> None:
    with hostile_server("flood", "flood", size=REPLY_CAP * 100) as server:
        request = Call("POST", server.url, b"{}", {}, allow_private=True, what="callback URL")
        reply = call_blocking(request, deadline_s=30)
    assert (reply.status_code, len(reply.head), reply.cut) == (200, REPLY_CAP, True)


def test_a_name_is_resolved_once_and_the_checked_address_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS rebinding: the name answers a public address when it is checked and loopback a
    moment later. The call goes to the address that was checked, never to loopback."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.example":
            return real(host, port, *args, **kwargs)
        asked.append(host)
        address = "192.0.32.10" if len(asked) == 1 else "127.0.0.1"  # a public one, then not
        return real(address, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with hostile_server("inside", "ok") as inside:
        port = inside.url.split(":")[2].split("/")[0]
        url = f"http://rebind.example:{port}/inside"
        request = Call("POST", url, b"{}", {}, allow_private=False, what="callback URL")
        with pytest.raises(CallFailed):  # the public address is not reachable from here
            call_blocking(request, deadline_s=2)
    assert asked == ["rebind.example"] and inside.bodies == []


def test_a_dripping_receiver_holds_no_other_receivers_webhooks(
    sqlite_url: str, tmp_path: Path
) -> None:
    """Alice's receiver answers a byte every 0.2 s (inside any read timeout) for 60 s; Bob's
    answers at once. Bob's webhook is delivered while Alice's reply is still dripping, and
    Alice's send is cut at its deadline (3 s), not read for the whole minute."""
    log = Log()
    settings = settings_for(sqlite_url, tmp_path, webhooks=FAST | {"timeout_s": 3})
    with (
        hostile_server("slow", "drip", log, size=300, interval_s=0.2) as slow,
        hostile_server("fast", "ok", log) as fast,
        running_api(settings) as api,
    ):
        alice, bob = api.client(api.key("alice")), api.client(api.key("bob"))
        submit(alice, [("a.pdf", pdf(1))], callback_url=slow.url)
        wait_until(lambda: log.count("slow", "arrived") >= 1)
        job_id = submit(bob, [("b.pdf", pdf(1))], callback_url=fast.url).json()["id"]  # type: ignore[attr-defined]
        wait_until(all_delivered(bob, job_id, 1))
        wait_until(lambda: log.count("slow", "ended") >= 1)
        [alices] = alice.get("/v1/jobs").json()["items"]
        wait_until(
            lambda: bool(alice.get(f"/v1/jobs/{alices['id']}/deliveries").json()[0]["tries"])
        )
        tries = alice.get(f"/v1/jobs/{alices['id']}/deliveries").json()[0]["tries"]
    # Bob's arrived after Alice's began and before it ended: it did not wait for her receiver.
    assert log.first("slow", "arrived") < log.first("fast", "arrived") < log.first("slow", "ended")
    assert slow.sent[0] < 300  # her reply was cut off at the deadline, not read to its end
    assert tries[0]["status_code"] is None and "within 3 s" in tries[0]["error"]


def test_a_metrics_page_past_its_cap_is_refused_not_read_whole() -> None:
    """The other outbound reply Folio reads: a server's /metrics (app/servermetrics)."""
    with hostile_server("metrics", "flood", size=4 * MAX_METRICS_BYTES) as server:
        with pytest.raises(ServerMetricsUnavailable, match="metrics over"):
            read_counters(server.url)  # a GET: the hostile server answers any method
        wait_until(lambda: server.log.count("metrics", "ended") == 1)
    assert server.sent[0] < MAX_METRICS_BYTES + BUFFERED
