"""The report read from real database rows (SQLite and PostgreSQL) and through `folio report`."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app
from app.db.engine import Database
from app.db.models import Attempt
from app.report.build import build_report
from app.servermetrics.counters import ServerCounters
from app.servermetrics.sampler import ServerSampler
from tests.report_scenario import A1, EXPECTED, Spec, insert_job, settings

runner = CliRunner()


def test_figures_from_database_rows(db_url: str) -> None:
    job_id = insert_job(Database(db_url))
    report = build_report(Database(db_url), settings(db_url), job_id).report.to_dict()
    for key, value in EXPECTED.items():
        if key != "job_id":
            assert report[key] == pytest.approx(value), key
    tails = [d["tail"] for d in report["degenerate_pages"]]
    assert len(tails) == 2 and tails[0].endswith("<b>loop</b> & ")


def test_another_job_on_the_same_gpu_takes_its_share(db_url: str) -> None:
    db = Database(db_url)
    job_id = insert_job(db)
    # Another job generates at A1's rate (300 tok/s) on `gpu` during [8, 10]: it takes half.
    neighbour = Spec(("x", 1), "greedy", "vlm", "m-gpu", "gpu", "ok", 8, 10, 10, 600, 4000)
    insert_job(db, [neighbour], with_pages=False)
    report = build_report(db, settings(db_url), job_id).report
    assert report.cost_usd == pytest.approx(EXPECTED["cost_usd"] - 0.002)
    assert report.cost_usd_degenerate == pytest.approx(EXPECTED["cost_usd_degenerate"] - 0.002)


def test_folio_report_formats(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_id = insert_job(Database(db_url))
    config = tmp_path / "folio.toml"
    config.write_text(
        "cpu_usd_per_hour = 0.36\n"
        '[vlm_endpoints.gpu]\nbase_url = "http://gpu/v1"\nmodel = "m-gpu"\n'
        "usd_per_gpu_hour = 3.6\ngpus = 2\n"
        '[vlm_endpoints.api]\nbase_url = "http://api/v1"\nmodel = "m-api"\n'
        "usd_per_m_input = 1.0\nusd_per_m_output = 2.0\n"
    )
    monkeypatch.setenv("FOLIO_CONFIG", str(config))
    base = ["report", job_id, "--database-url", db_url]

    as_json = runner.invoke(app, base)
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["cost_usd"] == pytest.approx(EXPECTED["cost_usd"])

    out = tmp_path / "attempts.csv"
    written = runner.invoke(app, [*base, "--format", "csv", "--attempts", "--out", str(out)])
    assert written.exit_code == 0, written.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["status"] for r in rows][:2] == ["degenerate", "ok"]
    assert float(rows[0]["cost_usd"]) == pytest.approx(A1)

    table = runner.invoke(app, [*base, "--format", "table"], env={"COLUMNS": "160"})
    assert "Cost and degeneration" in table.stdout and "m-gpu" in table.stdout

    missing = runner.invoke(app, ["report", "nope", "--database-url", db_url])
    assert missing.exit_code == exit_codes.NO_INPUT


def test_the_loop_stop_each_endpoint_relied_on_is_in_the_report_and_status(db_url: str) -> None:
    db = Database(db_url)
    job_id = insert_job(db)
    probe = "engine plugin installed but NOT live: client-side stops used"
    close = "closing a stream does NOT stop the server's work: 300 tokens generated after"
    received, probe_tokens = 0, {"loop_stop_close_tokens": 2048}
    with db.session() as session:
        for attempt in session.scalars(select(Attempt).where(Attempt.job_id == job_id)):
            if attempt.endpoint == "gpu":  # the engine records these (app/engines/vlm_stops)
                attempt.params = {
                    "loop_stop": "client_close",
                    "loop_stop_probe": probe,
                    "loop_stop_close": "NOT live",
                    "loop_stop_close_probe": close,
                } | probe_tokens  # the close probe's tokens, on the attempt that ran it
                probe_tokens = {}
                received += attempt.completion_tokens or 0
        session.commit()
    # The server's own counters for the job: 5,000 tokens more than the attempts received,
    # besides the 2,048 of the close probe.
    readings = iter([1000.0, 1000.0 + received + 5000 + 2048])
    sampler = ServerSampler(
        db,
        {"gpu": "http://gpu/metrics"},
        "w1",
        read=lambda url: ServerCounters(next(readings), None, None, 1.0),
    )
    sampler.before_page(job_id, {"gpu"})
    sampler.after_page(job_id, {"gpu"})

    report = build_report(db, settings(db_url), job_id).report
    shown = runner.invoke(app, ["status", job_id, "--database-url", db_url])

    evidence = f"server generated {received + 5000:,} tokens, Folio received {received:,}"
    gpu = next(s for s in report.server_endpoints if s.endpoint == "gpu")
    assert gpu.close_probe_tokens == 2048
    assert report.loop_stops["gpu"].startswith(f"client_close ({probe}; {close})")
    assert f"this job: {evidence}" in report.loop_stops["gpu"], report.loop_stops
    assert "2,048 for the close probe" in report.loop_stops["gpu"]
    assert shown.exit_code == 0, shown.output
    said = " ".join(shown.output.split())
    assert "loop stop on gpu: client_close" in said and "does NOT stop" in said
