"""`?wait=` and the event stream over real HTTP, and the feed and ETA behind them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from app.api.runner import LocalJobRunner
from app.cli.main import app as cli
from app.db.engine import Database
from app.db.models import Page
from app.pdf import samples
from app.progress.eta import eta_seconds
from app.progress.feed import JobFeed, job_end_kind
from tests.api_server import Api, running_api
from tests.test_api import assert_problem, settings_for, submit

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(*seconds: float) -> list[datetime]:
    return [T0 + timedelta(seconds=s) for s in seconds]


@pytest.mark.parametrize(
    ("finished", "open_pages", "expected"),
    [
        (at(), 5, None),
        (at(0), 5, None),
        (at(0, 0), 5, None),  # no measured pace yet
        (at(0, 2, 4), 2, 4.0),  # a page every 2 s
        (at(0, 2, 4), 0, 0.0),
        (at(*range(0, 200, 2), *range(200, 240)), 10, 10.0),  # the latest pages' pace
    ],
)
def test_eta_from_measured_pace(
    finished: list[datetime], open_pages: int, expected: object
) -> None:
    assert eta_seconds(finished, open_pages) == expected


class Held:
    """An API whose job runner starts only when the test says so."""

    def __init__(self, api: Api, runner: LocalJobRunner) -> None:
        self.api = api
        self.runner = runner


@pytest.fixture
def held(db_url: str, tmp_path: Path) -> Iterator[Held]:
    settings = settings_for(db_url, tmp_path, events_poll_s=0.05)
    runner = LocalJobRunner(settings, Database(db_url), start=False)
    with running_api(settings, runner) as api:
        yield Held(api, runner)


def read_events(client: httpx.Client, job_id: str, last: str | None = None) -> list[dict]:
    headers = {"Last-Event-ID": last} if last else {}
    events: list[dict] = []
    with client.stream("GET", f"/v1/jobs/{job_id}/events", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        block: dict = {}
        for line in response.iter_lines():
            if not line:
                if "event" in block:
                    events.append(block)
                block = {}
            elif line.startswith(("id: ", "event: ")):
                name, value = line.split(": ", 1)
                block[name] = value
            elif line.startswith("data: "):
                block["data"] = json.loads(line[6:])
    return events


def test_wait_holds_until_the_job_ends(held: Held) -> None:
    client = held.api.client(held.api.key("alice"))
    job_id = submit(client, [("a.pdf", samples.born_digital_pdf(["x " * 60] * 3))]).json()["id"]  # type: ignore[attr-defined]
    waited = client.get(f"/v1/jobs/{job_id}", params={"wait": 0.3}).json()
    assert waited["status"] == "pending"  # the runner holds it: the wait ran out
    held.runner.start()
    done = client.get(f"/v1/jobs/{job_id}", params={"wait": 120}).json()
    assert done["status"] == "done" and done["pages"] == {"succeeded": 3}
    assert_problem(client.get(f"/v1/jobs/{job_id}", params={"wait": 10_000}), 422)


def test_events_stream_pages_then_the_end_and_resume(held: Held) -> None:
    client = held.api.client(held.api.key("alice"))
    pdf = samples.born_digital_pdf([samples.page_text(n) for n in range(3)] + [""])
    job_id = submit(client, [("a.pdf", pdf)]).json()["id"]  # type: ignore[attr-defined]
    held.runner.start()
    events = read_events(client, job_id)
    pages = [e for e in events if e["event"] == "page.finished"]
    assert [e["event"] for e in events] == ["page.finished"] * 4 + ["job.finished"]
    outcomes = sorted((e["data"]["page"]["number"], e["data"]["page"]["outcome"]) for e in pages)
    assert outcomes == [(1, "ok"), (2, "ok"), (3, "ok"), (4, "failed")]
    assert all(e["data"]["total"] == 4 for e in pages)
    assert events[-1]["data"]["finished"] == 4 and events[-1]["data"]["eta_s"] == 0.0
    # Resumed from the last page event: the pages of the grace window again, then the end.
    again = read_events(client, job_id, last=pages[-1]["id"])
    assert again[-1]["event"] == "job.finished"
    assert {e["data"]["page"]["id"] for e in again[:-1]} <= {e["data"]["page"]["id"] for e in pages}
    later = str(int(pages[-1]["id"].split("-")[0]) + 60_000_000)
    assert [e["event"] for e in read_events(client, job_id, last=later)] == ["job.finished"]


def test_another_keys_job_is_404_for_wait_and_events(held: Held) -> None:
    alice = held.api.client(held.api.key("alice"))
    job_id = submit(alice, [("a.pdf", samples.born_digital_pdf(["x " * 60]))]).json()["id"]  # type: ignore[attr-defined]
    bob = held.api.client(held.api.key("bob"))
    assert_problem(bob.get(f"/v1/jobs/{job_id}", params={"wait": 1}), 404)
    assert_problem(bob.get(f"/v1/jobs/{job_id}/events"), 404)


def test_feed_resumes_from_a_page_and_gives_each_page_once(sqlite_url: str, tmp_path: Path) -> None:
    settings = settings_for(sqlite_url, tmp_path)
    runner = LocalJobRunner(settings, Database(sqlite_url), start=False)
    with running_api(settings, runner) as api:
        client = api.client(api.key("alice"))
        pdf = samples.born_digital_pdf([samples.page_text(n) for n in range(4)])
        job_id = submit(client, [("a.pdf", pdf)]).json()["id"]  # type: ignore[attr-defined]
        runner.start()
        client.get(f"/v1/jobs/{job_id}", params={"wait": 120})
    db = Database(sqlite_url)
    with db.session() as session:  # the pages finished 10 s apart, in page order
        for number, moment in enumerate(at(0, 10, 20, 30), start=1):
            session.execute(update(Page).where(Page.number == number).values(finished_at=moment))
    first = JobFeed(db, job_id, grace_s=0).poll()
    assert [e.data["page"]["number"] for e in first[:-1]] == [1, 2, 3, 4]
    assert first[-1].kind == "job.finished"
    resumed = JobFeed(db, job_id, last_event_id=first[1].id, grace_s=0).poll()
    assert [e.data["page"]["number"] for e in resumed[:-1]] == [2, 3, 4]
    graced = JobFeed(db, job_id, last_event_id=first[2].id, grace_s=15).poll()
    assert [e.data["page"]["number"] for e in graced[:-1]] == [2, 3, 4]
    feed = JobFeed(db, job_id)
    assert len(feed.poll()) == 5 and feed.poll() == [] and feed.ended


def test_folio_cancel_ends_the_stream_with_job_cancelled(held: Held) -> None:
    client = held.api.client(held.api.key("alice"))
    pdf = samples.born_digital_pdf([samples.page_text(n) for n in range(3)])
    job_id = submit(client, [("a.pdf", pdf)]).json()["id"]  # type: ignore[attr-defined]
    url = held.api.settings.database_url
    cancelled = CliRunner().invoke(cli, ["cancel", job_id, "--database-url", url])
    assert cancelled.exit_code == 0, cancelled.output
    events = read_events(client, job_id)
    assert [e["event"] for e in events] == ["page.finished"] * 3 + ["job.cancelled"]
    assert {e["data"]["page"]["failure_category"] for e in events[:-1]} == {"cancelled"}
    assert {e["data"]["page"]["retryable"] for e in events[:-1]} == {True}
    again = CliRunner().invoke(cli, ["cancel", job_id, "--database-url", url])
    assert again.exit_code == 2 and "ended already" in again.output
    assert_problem(client.post(f"/v1/jobs/{job_id}/cancel"), 409)


def test_openapi_documents_the_additions_with_examples(held: Held) -> None:
    spec = held.api.client(None).get("/openapi.json").json()
    paths = spec["paths"]
    events = paths["/v1/jobs/{job_id}/events"]["get"]
    assert "job.finished" in events["responses"]["200"]["content"]["text/event-stream"]["example"]
    assert "application/problem+json" in events["responses"]["404"]["content"]
    wait = next(p for p in paths["/v1/jobs/{job_id}"]["get"]["parameters"] if p["name"] == "wait")
    assert wait["schema"]["maximum"] == 300 and wait["schema"]["examples"]
    deliveries = paths["/v1/jobs/{job_id}/deliveries"]["get"]["responses"]
    assert "application/problem+json" in deliveries["404"]["content"]
    webhook = paths["/v1/webhook"]["put"]["responses"]
    assert "application/problem+json" in webhook["422"]["content"] and "404" not in webhook
    schemas = spec["components"]["schemas"]
    assert schemas["DeliveryOut"]["examples"] and schemas["FailedPageOut"]["examples"]
    assert schemas["PageDetail"]["properties"]["positions"]["examples"]


@pytest.mark.parametrize(
    ("status", "documents", "expected"),
    [
        ("running", {"running": 1}, None),
        ("cancelled", {"partial": 1}, "job.cancelled"),
        ("done", {"done": 1, "failed": 1}, "job.finished"),
        ("done", {"partial": 1}, "job.finished"),
        ("done", {"failed": 2}, "job.failed"),
        ("done", {}, "job.finished"),
    ],
)
def test_job_end_kind(status: str, documents: dict[str, int], expected: str | None) -> None:
    assert job_end_kind(status, documents) == expected
