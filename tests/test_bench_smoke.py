"""Smoke runs of the benchmarks: structure and sanity only, never timings."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from bench import detector, rasterize
from bench.__main__ import BENCHES, summary_rows
from bench.degeneration_tax import TaxConfig, parse_args, run_benchmark
from bench.loop_shapes import build_shapes, tail_period
from bench.ocr_text import generated_pages
from bench.tax_tables import results_table, shape_table
from bench.tax_workload import ARMS, WorkloadConfig, build_workload, plan_for
from tests.vllm_cpu.server import VllmEndpoint

SMOKE = TaxConfig(
    workload=WorkloadConfig(pages=12, degenerate_share=0.2, max_tokens=256, median_tokens=32),
    repeats=1,
    concurrency=4,
    arms=("A", "B", "E"),  # the shape sweep then runs E alone
)


def test_workload_is_seeded_and_has_the_asked_share_of_loops() -> None:
    config = WorkloadConfig(pages=400, degenerate_share=0.025)
    pages = build_workload(config, sources=30, shapes=4)

    assert pages == build_workload(config, sources=30, shapes=4)
    assert sum(p.degenerate for p in pages) == 10
    assert all(config.min_tokens <= p.healthy_tokens <= config.max_tokens // 2 for p in pages)
    assert {p.shape for p in pages if p.degenerate} == {0, 1, 2, 3}  # every shape in turn
    assert all(p.shape is None for p in pages if not p.degenerate)
    looping = next(p for p in pages if p.degenerate)
    assert [s.name for s in plan_for(looping, ARMS["A"], config)] == ["greedy"]
    assert [s.name for s in plan_for(looping, ARMS["B"], config)] == ["healthy"]
    assert [s.name for s in plan_for(looping, ARMS["C"], config)] == ["greedy", "retry-penalized"]


def test_loop_shapes_span_short_and_long_periods_and_outlast_the_cap() -> None:
    shapes = build_shapes(generated_pages(), [], min_chars=5000)
    periods = {shape.name: shape.period_chars for shape in shapes}

    assert periods["char-run"] == 1 and periods["block-digits"] >= 500
    assert all(len(shape.text) >= 5000 for shape in shapes)
    assert tail_period("intro " + "abc-" * 20) == 4
    assert tail_period("Intro.\n" + "Happy birthday to you!!!\n" * 5) == 25  # not the '!' run
    counter = next(shape for shape in shapes if shape.name == "line-counter").text
    assert counter.count("\n") > 50 and len(set(counter.splitlines()[-20:])) == 20


def test_cli_options_override_the_quick_preset() -> None:
    argv = ["--quick", "--pages", "30", "--arms", "a,b,d16", "--url", "http://x:1"]
    config, url = parse_args(argv)

    assert config.workload.pages == 30 and config.workload.max_tokens == 512
    assert config.arms == ("A", "B", "D16") and url == "http://x:1"
    with pytest.raises(SystemExit):
        parse_args(["--arms", "A,C"])  # no floor


@pytest.mark.vllm
def test_tax_bench_against_the_real_server(vllm_endpoint: VllmEndpoint) -> None:
    console = Console(file=io.StringIO(), width=160)
    report = run_benchmark(SMOKE, vllm_endpoint.base_url, console)
    summary = report["summary"]
    console.print(results_table(summary))
    console.print(shape_table(report["by_shape"]))

    assert set(summary) == {"A", "B", "E"}
    assert summary["B"]["inflation_over_b"] == 0
    for arm in summary.values():
        assert arm["pages"] == 12 and arm["degenerate_pages"] == 2
        assert arm["server_tokens"] >= arm["client_tokens"] - 1 > 0
    # A lets both loops run to the cap and recovers nothing; B never loops.
    assert summary["A"]["pages_recovered"] == 0
    assert summary["A"]["loop_tokens_at_stop"] == 256
    assert summary["A"]["loop_stops"] == {"none": 2}
    assert summary["B"]["healthy_with_loop"]["requests"] == 0
    assert summary["B"]["healthy_flagged"] == 0  # real healthy pages are not loops
    # Client detector + server-side stop cut loops short; most shapes are caught.
    assert summary["E"]["loop_tokens_at_stop"] < 256
    sweep = report["by_shape"]
    assert sum(sweep["arms"]["E"]["caught"]) > len(sweep["shapes"]) // 2
    assert summary_rows("tax", report)[0][0].startswith("tax arm A")
    assert "%" in summary_rows("tax", report)[0][1]


def test_rasterize_bench_on_generated_pages(tmp_path: Path) -> None:
    report = rasterize.run(rasterize.generated_pages(tmp_path, 2), "generated")

    assert report["pages"] == 2
    low, high = report["dpi"]["150"], report["dpi"]["200"]
    assert high["pymupdf"]["mean_width_px"] > low["pymupdf"]["mean_width_px"]
    if shutil.which("pdftoppm"):
        # Same pages, same DPI: both rasterisers produce the same image size.
        assert abs(high["pdftoppm"]["mean_width_px"] - high["pymupdf"]["mean_width_px"]) <= 2
        assert high["pymupdf_over_pdftoppm"] > 0
    else:
        assert "skipped" in report
    assert len(summary_rows("rasterize", report)) == 2


def test_detector_speed_bench_sees_the_loops_it_streams() -> None:
    speed = detector.measure_speed(20_000, 16)

    assert speed["chars"] == 20_000 and speed["verdicts"] > 0
    assert summary_rows("detector", {"speed": speed})[0][1]


def test_every_registered_bench_is_callable() -> None:
    assert {"tax", "rasterize", "detector"} <= set(BENCHES)
    assert all(callable(bench) for bench in BENCHES.values())
