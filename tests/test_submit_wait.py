"""`folio submit --wait` follows the job's event feed to its end, with real Celery workers."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from tests.conftest import REDIS_URL
from tests.distributed_support import start_worker, stop_worker, worker_env, write_text_pdfs
from tests.test_distributed import pg_url, prefix

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
__all__ = ["pg_url", "prefix"]


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
