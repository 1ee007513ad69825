"""`python -m bench scale --smoke`: the whole deployment (PostgreSQL, Redis, Celery GPU and CPU
workers, real PDFs) against GPU stand-ins, in bounded counts. Asserts on outcomes, never on
timing: every page ends terminal, loops are stopped where a stop is on, every figure is there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import create_engine, text

from bench.scale import run
from tests.conftest import POSTGRES_URL, REDIS_URL, unavailable

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


@pytest.fixture
def services() -> None:
    try:
        redis.Redis.from_url(REDIS_URL).ping()
        with create_engine(POSTGRES_URL).connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # either service missing: skip locally, fail in CI
        unavailable(f"PostgreSQL or Redis: {exc}")


def test_the_smoke_run_ends_every_page_stops_loops_and_reports_every_figure(
    services: None, tmp_path: Path
) -> None:
    # written where the test says, not over the committed bench/results/scale_smoke.json
    out = tmp_path / "scale_smoke.json"
    report: dict[str, Any] = run.main(["--smoke", "--out", str(out)])
    assert json.loads(out.read_text())["result"] == report["result"]

    tax, scale = report["result"]["tax"], report["result"]["scale"]
    assert set(tax) == {"floor", "no_stop", "server_rd", "folio"}
    for arm in [*tax.values(), scale]:
        assert arm["all_terminal"] and arm["pages"] == (
            run.SMOKE["scale_pages"] if arm is scale else run.SMOKE["pages"]
        )
        for figure in ("pages_per_s_per_gpu", "slots_busy_mean", "gpu_tokens", "wall_s"):
            assert arm[figure] and arm[figure] > 0
        assert set(arm["cpu_ms_per_page"]) >= {"render", "encode", "stream_detect", "postgres"}
        # each page rasterised once, at the model's size; again only where Tesseract reads it
        rasters = round(arm["rasters_per_page"] * arm["pages"])
        assert arm["pages"] <= rasters <= arm["pages"] + arm["engines"].get("tesseract", 0)
    assert tax["floor"]["loops_started"] == 0
    # the same pages loop in every arm with loops (the stand-in answers by image)
    assert tax["no_stop"]["loops_started"] == tax["folio"]["loops_started"] > 0
    # without a stop every loop judged runs to the cap; Folio's default stops them before it
    no_stop = tax["no_stop"]
    assert no_stop["degenerate_at_cap"] == no_stop["degenerate_attempts"] > 0
    assert tax["folio"]["degenerate_at_cap"] < no_stop["degenerate_at_cap"]
    assert tax["folio"]["gpu_tokens"] < tax["no_stop"]["gpu_tokens"]
    # a closed stream still computed the queued step's tokens on the server, which vLLM's
    # generation counter leaves out (the API server had aborted the request)
    closed = tax["folio"]["tokens_after_close"]
    assert closed["min"] >= 2
    assert tax["folio"]["gpu_tokens"] - tax["folio"]["counted_tokens"] >= 2 * closed["count"]
    sizing = report["result"]["sizing"]
    assert sizing["cores_per_gpu"] > 0 and 3 < sizing["full_gpu_pages_per_s"] < 15
