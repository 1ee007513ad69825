"""`folio run` then `folio report` on generated PDFs through the real embedded pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app
from app.pdf import samples

runner = CliRunner()


def test_report_of_a_real_run(db_url: str, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "digital.pdf").write_bytes(
        samples.born_digital_pdf([samples.page_text(1), samples.page_text(2)])
    )
    (source / "scan.pdf").write_bytes(samples.scanned_pdf([samples.page_text(3, paragraphs=1)]))
    env = {"FOLIO_DATABASE_URL": db_url, "FOLIO_CPU_USD_PER_HOUR": "3.6", "COLUMNS": "160"}
    out = tmp_path / "out"

    run = runner.invoke(app, ["run", str(source), "--out", str(out), "--concurrency", "2"], env=env)
    assert run.exit_code == exit_codes.OK, run.output
    assert "Cost and degeneration" in run.stdout and "By model" in run.stdout
    job_id = json.loads((out / "summary.json").read_text())["job_id"]

    shown = runner.invoke(app, ["report", job_id], env=env)
    assert shown.exit_code == 0, shown.output
    report = json.loads(shown.stdout)
    assert (report["documents_total"], report["documents_failed"]) == (2, 0)
    assert (report["pages_total"], report["pages_succeeded"], report["pages_failed"]) == (3, 3, 0)
    assert report["attempts_total"] == 3 and report["degenerate_attempts"] == 0
    assert report["degeneration_rate_first_attempt"] == 0.0 == report["degeneration_rate_final"]
    assert report["recovered_by"] == {} and report["tokens_generated"] == 0
    assert report["inflation_estimate"] == 0.0
    assert report["healthy_slowdown_with_concurrent_degenerate"] is None
    assert report["cost_usd"] > 0 and report["attempts_unpriced"] == 0
    # Every attempt is a CPU engine priced at $3.60 per core-hour: $0.001 per second.
    assert report["cost_usd"] == pytest.approx(report["engine_seconds"] * 0.001, rel=1e-6)
    assert report["cost_per_1k_pages"] == pytest.approx(report["cost_usd"] * 1000 / 3, rel=1e-6)
    engines = {m["engine"]: m["attempts"] for m in report["per_model"]}
    assert engines == {"textlayer": 2, "tesseract": 1}
    assert report["slowest_pages"][0]["document"] == "scan"
