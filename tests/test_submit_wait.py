"""Real Celery workers: `folio submit --wait` follows the job's event feed to its end, and a
worker sends the outbox's webhooks when no API server runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from app.pdf import samples
from app.settings import WebhookSettings
from app.webhooks.signing import HEADER, verify
from tests.api_server import running_api
from tests.conftest import REDIS_URL
from tests.distributed_support import start_worker, stop_worker, worker_env, write_text_pdfs
from tests.test_api import settings_for, submit
from tests.test_distributed import pg_url
from tests.webhook_receiver import running_receiver

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
__all__ = ["pg_url"]
ALLOWED = WebhookSettings(allow_private=True, poll_s=0.2)


def test_submit_wait_returns_when_the_job_ends(
    pg_url: str, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = write_text_pdfs(tmp_path / "in", documents=2, pages=3)
    env = worker_env(pg_url, REDIS_URL, prefix)
    for key, value in env.items():
        if key.startswith("FOLIO_"):
            monkeypatch.setenv(key, value)
    worker = start_worker(env, concurrency=2, log=tmp_path / "worker.log")
    try:
        result = CliRunner().invoke(app, ["submit", str(tmp_path / "in"), "--wait"])
    finally:
        stop_worker(worker)
    assert result.exit_code == 0, result.output
    assert ": done" in result.output and "succeeded" in result.output
    assert f"{pages} of {pages} pages finished" in result.output


def test_a_worker_sends_the_webhooks_when_no_api_server_runs(
    pg_url: str, prefix: str, tmp_path: Path
) -> None:
    settings = settings_for(pg_url, tmp_path, broker_url=REDIS_URL, queue_prefix=prefix)
    with running_receiver() as receiver:
        with running_api(settings.model_copy(update={"webhooks": ALLOWED})) as api:
            client = api.client(api.key("alice"))
            secret = client.get("/v1/webhook").json()["secret"]
            pdf = samples.born_digital_pdf([samples.page_text(n) for n in range(2)])
            job_id = submit(client, [("a.pdf", pdf)], callback_url=receiver.url).json()["id"]  # type: ignore[attr-defined]
        # The API server is gone before any page ran: only the worker can send the webhook.
        env = worker_env(
            pg_url,
            REDIS_URL,
            prefix,
            FOLIO_WEBHOOKS__ALLOW_PRIVATE="true",
            FOLIO_WEBHOOKS__POLL_S="0.2",
        )
        worker = start_worker(env, concurrency=2, log=tmp_path / "worker.log")
        try:
            deadline = time.monotonic() + 120
            while not receiver.received:
                assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
                time.sleep(0.2)
        finally:
            stop_worker(worker)
    [request] = receiver.received
    verify(secret, request.headers[HEADER], request.body)
    event = json.loads(request.body)
    assert (event["type"], event["data"]["job"]["id"]) == ("job.finished", job_id)
    assert event["data"]["job"]["outcomes"] == {"ok": 2}
