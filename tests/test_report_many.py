"""Reports of many jobs at once (the jobs list's figures) are the reports of each job alone,
also where jobs shared a GPU-priced endpoint at the same time (its busy time split between
them), on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from app.db import keys
from app.db.engine import Database
from app.report.build import listed_reports
from app.report.compute import compute_report
from app.report.cost import attempt_costs
from app.report.load import load_job_rows
from app.report.pricing import EndpointPrice, Pricing
from app.report.rows import ListedJob
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
        many = listed_reports(db, listed, pricing)
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
    shared = listed_reports(db, listed[:2], GPU)
    alone = listed_reports(db, listed[:1], GPU)
    assert shared[ids[0]].report.cost_usd == alone[ids[0]].report.cost_usd  # neighbours counted
    assert listed_reports(db, [], GPU) == {}


def test_a_pages_tables_costs_are_the_reports(db_url: str) -> None:
    """The pages table reads only GPU-priced neighbours and no tails; its costs are the
    report's all the same."""
    db = Database(db_url)
    with db.session() as session:
        key = keys.create_key(session, "k")[0].id
        seed_job(session, key, "a" * 32, 2, 3, 2, T0)
        seed_job(session, key, "b" * 32, 1, 3, 2, T0 + timedelta(seconds=1))
    for pricing in (GPU, TOKENS):
        full = compute_report(load_job_rows(db, "a" * 32), pricing).costs
        rows = load_job_rows(db, "a" * 32, shared=pricing.gpu_priced(), tails=False)
        light = attempt_costs(rows.attempts, rows.neighbours, pricing)
        assert {k: c.total for k, c in light.items()} == {k: c.total for k, c in full.items()}
        assert bool(rows.neighbours) == (pricing is GPU)
