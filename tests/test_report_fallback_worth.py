"""The report says what the text of a page that ended on an embedded reader is worth: the
reader's measured figures, with their source and date, beside the job's pages it gave."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app
from app.pdf import samples
from app.report import fallback_worth as worth
from app.report.rows import AttemptRow, PageRow
from bench.ocr.worth import measured

REPO = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 1, 5, 10, 0, 0, tzinfo=UTC)
runner = CliRunner()


def _attempt(id: int, page: int, engine: str, status: str, model: str | None = None) -> AttemptRow:
    return AttemptRow(id, page, engine, engine, model, None, status, T0, T0, 1.0)


def test_each_reader_counts_the_pages_whose_kept_text_it_gave() -> None:
    pages = [PageRow(n, "doc", n, "succeeded") for n in (1, 2, 3, 4)]
    attempts = [
        _attempt(1, 1, "vlm", "degenerate", "olmocr"),  # looped, then the text layer refused,
        _attempt(2, 1, "textlayer", "rejected"),
        _attempt(3, 1, "tesseract", "ok", "tesseract-5.5.4:eng"),  # and Tesseract answered
        _attempt(4, 2, "tesseract", "ok", "rapidocr-3:pp-ocrv6-small"),  # re-read by RapidOCR
        _attempt(5, 3, "textlayer", "ok"),
        _attempt(6, 4, "vlm", "ok", "olmocr"),  # the model's own answer: no embedded reader
    ]
    by_page = {n: [a for a in attempts if a.page_id == n] for n in (1, 2, 3, 4)}

    rows = worth.fallback_worth(pages, by_page)

    assert [(w.reader, w.pages, w.pages_after_loop) for w in rows] == [
        ("rapidocr", 1, 0),
        ("tesseract", 1, 1),
        ("text layer", 1, 0),
    ]
    for row in rows:
        assert row.measured == worth.MEASURED[row.reader]
        assert worth.MEASURED_ON in row.source and "bench ocr-worth" in row.source


def test_the_measured_figures_are_the_committed_bench_results() -> None:
    committed = json.loads((REPO / "bench/results/ocr_worth.json").read_text(encoding="utf-8"))
    assert measured(committed["result"]) == worth.MEASURED
    assert committed["machine"]["when"][:10] == worth.MEASURED_ON
    assert committed["commit"] == worth.MEASURED_AT
    assert set(worth.MEASURED) == {worth.TEXT_LAYER, worth.TESSERACT, worth.RAPIDOCR}


def test_a_run_reports_its_embedded_readers_pages_beside_their_worth(
    db_url: str, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "digital.pdf").write_bytes(
        samples.born_digital_pdf([samples.page_text(1), samples.page_text(2)])
    )
    (source / "scan.pdf").write_bytes(samples.scanned_pdf([samples.page_text(3, paragraphs=1)]))
    env = {"FOLIO_DATABASE_URL": db_url, "COLUMNS": "200"}
    out = tmp_path / "out"

    run = runner.invoke(app, ["run", str(source), "--out", str(out)], env=env)
    assert run.exit_code == exit_codes.OK, run.output
    assert "what its text is worth" in run.stdout
    job_id = json.loads((out / "summary.json").read_text())["job_id"]

    report = json.loads(runner.invoke(app, ["report", job_id], env=env).stdout)
    readers = {w["reader"]: w for w in report["fallback_worth"]}
    assert {r: (w["pages"], w["pages_after_loop"]) for r, w in readers.items()} == {
        "text layer": (2, 0),
        "tesseract": (1, 0),
    }
    text_layer = worth.MEASURED[worth.TEXT_LAYER]
    assert readers["text layer"]["measured"]["word_f1"] == text_layer.word_f1
    assert "bench ocr-worth" in readers["tesseract"]["source"]

    html = runner.invoke(app, ["report", job_id, "--format", "html"], env=env).stdout
    assert "what its text is worth" in html and f"{text_layer.word_f1:.2f}" in html
