"""The report's figures on hand-built timelines, checked against hand-computed values."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from app.report.compute import compute_report
from app.report.cost import attempt_costs
from app.report.pricing import Pricing
from app.report.render import ReportFormat, render_report
from app.report.rows import AttemptRow, DocumentRow, JobRows, PageRow
from app.report.timeline import split_healthy
from tests.report_scenario import A1, A5, A6, EXPECTED, PRICING, Spec, attempt_row, scenario_rows


def rows_of(*specs: Spec) -> list[AttemptRow]:
    return [attempt_row(i, i, s) for i, s in enumerate(specs, start=1)]


def vlm(status: str, start: float, end: float, tokens: int = 100, endpoint: str = "gpu") -> Spec:
    return Spec(("x", 1), "s", "vlm", "m", endpoint, status, start, end, 10, tokens, 1000)


def test_scenario_figures_match_hand_computed_values() -> None:
    report = compute_report(scenario_rows(), PRICING).report.to_dict()
    for key, value in EXPECTED.items():
        assert report[key] == pytest.approx(value), key
    assert next(iter(report)) == "schema_version" and report["schema_version"] == 1


def test_each_attempt_pays_its_share_of_the_busy_gpu() -> None:
    costs = {i: c.total for i, c in compute_report(scenario_rows(), PRICING).costs.items()}
    expected = {1: A1, 2: 0.004, 3: 0.002, 4: 0.008 / 7, 5: A5, 6: A6}
    assert costs == pytest.approx(expected)


def test_other_jobs_on_the_endpoint_take_their_share() -> None:
    mine = rows_of(vlm("ok", 0, 10, tokens=1000))
    other = [attempt_row(99, 99, vlm("ok", 5, 10, tokens=500))]  # 100 tok/s vs mine 100 tok/s
    cost = attempt_costs(mine, other, PRICING)[1].gpu
    assert cost == pytest.approx(5 * 0.002 + 5 * 0.002 / 2)


def test_slices_without_token_counts_split_evenly() -> None:
    rows = rows_of(vlm("error", 0, 4, tokens=0), vlm("transport_error", 2, 4, tokens=0))
    costs = attempt_costs(rows, [], PRICING)
    assert (costs[1].gpu, costs[2].gpu) == pytest.approx((0.004 + 0.002, 0.002))


def test_unpriced_endpoints_cost_nothing_and_are_counted() -> None:
    rows = rows_of(vlm("ok", 0, 1, endpoint="elsewhere"))
    report = compute_report(
        JobRows("j", "vlm", "done", None, None, attempts=rows), Pricing()
    ).report
    assert (report.cost_usd, report.attempts_unpriced) == (0.0, 1)


def test_slowdown_needs_both_groups() -> None:
    only_overlapping = rows_of(vlm("degenerate", 0, 10), vlm("ok", 1, 4))
    assert split_healthy(only_overlapping).slowdown is None
    other_endpoint = rows_of(vlm("degenerate", 0, 10), vlm("ok", 1, 4, endpoint="api"))
    assert split_healthy(other_endpoint).with_degenerate == []
    both = rows_of(vlm("degenerate", 0, 10), vlm("ok", 1, 7), vlm("ok", 10, 12), vlm("ok", 20, 24))
    assert split_healthy(both).slowdown == pytest.approx(6 / 3)


def test_tables_model_rows_and_degenerate_tails() -> None:
    report = compute_report(scenario_rows(), PRICING, slowest=3, tail_chars=40).report
    assert [(m.model, m.attempts, m.degenerate_attempts) for m in report.per_model] == [
        ("m-gpu", 4, 1),
        ("m-api", 1, 1),
        ("tesseract-5:eng", 1, 0),
    ]
    gpu = report.per_model[0]
    assert (gpu.tokens_prompt, gpu.tokens_generated, gpu.engine_seconds) == (400, 3800, 20.0)
    assert (gpu.cost_usd, gpu.cost_usd_degenerate) == pytest.approx((0.024, A1))
    assert [(p.document, p.page, p.engine_seconds) for p in report.slowest_pages] == [
        ("a", 1, 12.0),
        ("a", 2, 4.0),
        ("b", 1, 4.0),
    ]
    assert report.by_outcome["degenerate"].tokens_generated == 3500
    assert report.by_outcome["ok"].cost_usd == pytest.approx(0.004 + 0.002 + 0.008 / 7 + A5)
    tails = [(d.document, d.page, d.tail) for d in report.degenerate_pages]
    assert tails[0] == ("a", 1, "…" + ("<b>loop</b> & " * 3)[-40:])
    assert [t[:2] for t in tails] == [("a", 1), ("c", 1)]


def test_json_csv_and_table_renderings() -> None:
    job = compute_report(scenario_rows(), PRICING)
    data = json.loads(render_report(job, ReportFormat.JSON))
    assert data["cost_usd"] == pytest.approx(EXPECTED["cost_usd"])
    pages = render_report(job, ReportFormat.CSV).splitlines()
    assert pages[0].startswith("job_id,document,page,status") and len(pages) == 1 + 5
    assert pages[1] == f"job1,a,1,fallback,penalized,,2,1,12.0,200,3200,{A1 + 0.004:.9f},0"
    attempts = render_report(job, ReportFormat.CSV, per_attempt=True).splitlines()
    assert len(attempts) == 1 + 6 and ",degenerate," in attempts[1]
    table = render_report(job, ReportFormat.TABLE)
    assert "Cost and degeneration" in table and "penalized 1" in table
    assert f"{EXPECTED['inflation_estimate']:.1%}" in table


def test_a_job_without_attempts_still_reports() -> None:
    rows = JobRows("j", "auto", "done", None, None, documents=[DocumentRow("x", "failed")])
    job = compute_report(rows, PRICING)
    assert (job.report.documents_failed, job.report.wall_seconds) == (1, 0.0)
    assert job.report.inflation_estimate is None and job.report.cost_per_1k_pages is None
    for fmt in ReportFormat:
        assert render_report(job, fmt)


def confirmed(status: str, start: float, end: float, tokens: int, aborted: bool = False) -> Spec:
    return Spec(("x", 1), "s", "vlm", "m", "gpu", status, start, end, 10, tokens, 1000, aborted)


def test_false_alarms_are_not_degeneration_and_save_nothing() -> None:
    """Page 1: two stops a confirming attempt proved wrong (its answer kept); page 2: a real
    loop, stopped twice, then run to its cap by the confirming attempt."""
    specs = [
        (1, confirmed("false_alarm", 0, 1, 400, aborted=True), None),
        (1, confirmed("false_alarm", 1, 2, 410, aborted=True), None),
        (1, confirmed("ok", 2, 3, 500), "confirm"),
        (2, confirmed("degenerate", 0, 1, 150, aborted=True), None),
        (2, confirmed("degenerate", 1, 2, 150, aborted=True), None),
        (2, confirmed("degenerate", 2, 5, 1000), "confirm"),
    ]
    attempts = [
        replace(attempt_row(i, page, s), role=role)
        for i, (page, s, role) in enumerate(specs, start=1)
    ]
    pages = [PageRow(1, "x", 1, "fallback", "s"), PageRow(2, "x", 2, "failed", None, "degenerate")]
    job = compute_report(
        JobRows("j", "vlm", "done", None, None, pages=pages, attempts=attempts), PRICING
    )
    r = job.report
    assert (r.false_alarm_pages, r.false_alarm_attempts, r.confirming_attempts) == (1, 2, 2)
    assert r.loops_confirmed == 1  # page 2's confirming attempt looped
    assert (r.tokens_false_alarm, r.tokens_confirming) == (810, 1500)
    assert (r.degenerate_attempts, r.tokens_degenerate) == (3, 1300)
    assert r.degeneration_rate_first_attempt == 0.5 == r.degeneration_rate_final
    assert r.tokens_saved_by_abort == 2 * (1000 - 150)  # only the real loop's stops saved any
    assert r.by_outcome["false_alarm"].tokens_generated == 810
    assert [d.page for d in r.degenerate_pages] == [2, 2, 2]
    csv_pages = render_report(job, ReportFormat.CSV).splitlines()
    assert csv_pages[0].endswith(",false_alarm_attempts") and csv_pages[1].endswith(",2")
    attempts_csv = render_report(job, ReportFormat.CSV, per_attempt=True).splitlines()
    assert attempts_csv[3].endswith(",confirm") and ",false_alarm," in attempts_csv[1]
    assert "1 pages kept the model's answer" in render_report(job, ReportFormat.TABLE)
    assert "false alarms (answer kept)" in render_report(job, ReportFormat.HTML)


def test_verdicts_the_page_overruled_are_counted_not_charged() -> None:
    """Grounding: a stream whose verdicts the page's text overruled went on to its answer."""
    spec = vlm("ok", 0, 1, 500)
    attempts = [
        replace(attempt_row(1, 1, spec), overruled=3),
        replace(attempt_row(2, 2, spec), overruled=None),
        replace(attempt_row(3, 3, spec), overruled=1),
    ]
    pages = [PageRow(p, "x", p, "succeeded", "s") for p in (1, 2, 3)]
    rows = JobRows("j", "vlm", "done", None, None, pages=pages, attempts=attempts)
    job = compute_report(rows, PRICING)

    assert (job.report.verdicts_overruled, job.report.pages_overruled) == (4, 2)
    assert job.report.degenerate_attempts == 0 and job.report.tokens_degenerate == 0
    assert "4 verdicts on 2 pages overruled" in render_report(job, ReportFormat.TABLE)
