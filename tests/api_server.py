"""A real Folio API server on a free port, in a thread, for tests that talk HTTP to it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import uvicorn

from app.api.app import create_app
from app.api.runner import JobRunner
from app.db import keys
from app.db.engine import Database
from app.settings import Settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Api:
    base_url: str
    settings: Settings

    def key(self, name: str) -> str:
        with Database(self.settings.database_url).session() as session:
            return keys.create_key(session, name)[1]

    def client(self, token: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=60)


@contextmanager
def running_api(settings: Settings, runner: JobRunner | None = None) -> Iterator[Api]:
    port = free_port()
    config = uvicorn.Config(
        create_app(settings, runner), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the API server did not start")
        time.sleep(0.02)
    try:
        yield Api(f"http://127.0.0.1:{port}", settings)
    finally:
        server.should_exit = True
        thread.join(30)


def wait_for_job(client: httpx.Client, job_id: str, timeout: float = 120) -> dict[str, object]:
    """Poll until the job leaves pending/running (a wait, not an assertion on time)."""
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "cancelled", "undelivered") or time.monotonic() > deadline:
            return dict(job)
        time.sleep(0.1)
