"""Reports of many jobs at once (the jobs list's figures) are the reports of each job alone,
also where jobs shared a GPU-priced endpoint at the same time (its busy time split between
them), on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from app.db import keys
from app.db.engine import Database
from app.report.compute import compute_report
from app.report.load import load_job_rows
from app.report.many import ListedJob, job_reports
from app.report.pricing import EndpointPrice, Pricing
from bench.console import seed_job

T0 = datetime(2026, 11, 1, tzinfo=UTC)
GPU = Pricing(endpoints={"primary": EndpointPrice(usd_per_gpu_hour=3.6)})
TOKENS = Pricing(endpoints={"primary": EndpointPrice(usd_per_m_input=0.5, usd_per_m_output=2.0)})


def test_many_jobs_at_once_read_as_each_job_alone(db_url: str) -> None:
    db = Database(db_url)
    with db.session() as session:
        key = keys.create_key(session, "k")[0].id
    ids = [f"job{n:029d}" for n in range(4)]
    with db.session() as session:
        # jobs 0 and 1 ran at once (their attempts overlap), 2 and 3 later and apart
        for n, job_id in enumerate(ids):
            start = T0 + timedelta(seconds=(0, 1, 600, 1200)[n])
            seed_job(session, key, job_id, 2, 3, 2, start)
    listed = [ListedJob(j, "vlm", "done", T0, T0 + timedelta(hours=1)) for j in ids]
    for pricing in (TOKENS, GPU):
        many = job_reports(db, listed, pricing)
        for job_id in ids:
            alone = compute_report(load_job_rows(db, job_id), pricing).report
            got = many[job_id].report
            assert got.cost_usd > 0 and abs(got.cost_usd - alone.cost_usd) < 1e-12
            for name in (
                "pages_total",
                "pages_open",
                "degeneration_rate_first_attempt",
                "degeneration_rate_final",
                "tokens_prompt",
                "tokens_generated",
                "attempts_total",
            ):
                assert getattr(got, name) == getattr(alone, name), name
    rows = load_job_rows(db, ids[0])
    assert rows.neighbours  # the case is the one it means: job 1 shared job 0's GPU time
    lonely = compute_report(replace(rows, neighbours=[]), GPU).report.cost_usd
    assert many[ids[0]].report.cost_usd < lonely
    shared = job_reports(db, listed[:2], GPU)
    alone = job_reports(db, listed[:1], GPU)
    assert shared[ids[0]].report.cost_usd == alone[ids[0]].report.cost_usd  # neighbours counted
    assert job_reports(db, [], GPU) == {}
