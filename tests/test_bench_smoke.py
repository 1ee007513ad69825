"""Smoke runs of the benchmarks: structure and sanity only, never timings."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from bench import profile_images, rasterize
from bench.__main__ import BENCHES, bench, summary_rows
from bench.detector import benchmark as detector
from bench.environment import read_results, write_compressed, write_results
from bench.ocr.text import generated_pages
from bench.scripted import cut_to_tokens
from bench.scripted_loops import build_shapes, tail_period
from bench.tax.benchmark import TaxConfig, arm_order, parse_args, run_benchmark
from bench.tax.reestimate import reestimate
from bench.tax.run import ArmRun
from bench.tax.summary import summarize
from bench.tax.tables import results_table, shape_table
from bench.tax.validate import run_validation, validation_configs
from bench.tax.validation_tables import markdown, stops_markdown
from bench.tax.workload import ARMS, WorkloadConfig, build_workload, plan_for
from tests.vllm_cpu.server import VllmEndpoint

SMOKE = TaxConfig(
    workload=WorkloadConfig(pages=12, degenerate_share=0.2, max_tokens=256, median_tokens=32),
    repeats=1,
    concurrency=4,
    arms=("A", "B", "E"),  # the shape sweep then runs E alone
)


def test_workload_is_seeded_and_has_the_asked_share_of_loops() -> None:
    config = WorkloadConfig(pages=400, degenerate_share=0.025, median_tokens=128)
    lengths = [40 * (i + 1) for i in range(30)]
    pages = build_workload(config, lengths, shapes=4)

    assert pages == build_workload(config, lengths, shapes=4)
    assert sum(p.degenerate for p in pages) == 10
    assert all(config.min_tokens <= p.healthy_tokens <= config.max_tokens // 2 for p in pages)
    assert {p.shape for p in pages if p.degenerate} == {0, 1, 2, 3}  # every shape in turn
    assert all(p.shape is None for p in pages if not p.degenerate)
    looping = next(p for p in pages if p.degenerate)
    assert [s.name for s in plan_for(looping, ARMS["A"], config)] == ["greedy"]
    assert [s.name for s in plan_for(looping, ARMS["B"], config)] == ["healthy"]
    assert [s.name for s in plan_for(looping, ARMS["C"], config)] == ["greedy", "retry-penalized"]


def test_whole_pages_are_read_at_their_own_length_up_to_half_the_cap() -> None:
    config = WorkloadConfig(pages=50, max_tokens=1000)
    lengths = [5, 300, 700, 2600]
    pages = build_workload(config, lengths, shapes=2)

    expected = {0: config.min_tokens, 1: 300, 2: 500, 3: 500}
    assert all(p.healthy_tokens == expected[p.source] for p in pages)
    assert {p.source for p in pages} == {0, 1, 2, 3} and all(p.start == 0 for p in pages)
    text = "First line.\nSecond line of the page.\n"
    assert cut_to_tokens(text, 0.0, 100, per_char=0.3) == text.rstrip()


def test_scripted_loops_span_short_and_long_periods_and_outlast_the_cap() -> None:
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

    assert config.workload.pages == 30 and config.workload.degenerate_share == 0.1
    assert config.workload.median_tokens is None  # whole pages unless asked
    short, _ = parse_args(["--quick", "--median-tokens", "64", "--kv-blocks", "32"])
    assert short.workload.median_tokens == 64 and short.server.kv_blocks == 32
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
        # The report's figures sit beside the measured ones, for every arm.
        assert arm["server_tokens_unreceived"] >= 0 and arm["server_degenerate_share"] >= 0
        assert "report_inflation_estimate" in arm
    # A lets both loops run to the cap and recovers nothing; B never loops.
    assert summary["A"]["pages_recovered"] == 0
    assert summary["A"]["loop_tokens_at_stop"] == 256
    assert summary["A"]["loop_stops"] == {"none": 2}
    assert (
        summary["A"]["report_inflation_estimate"] > 0 == summary["B"]["report_inflation_estimate"]
    )
    assert summary["B"]["healthy_with_loop"]["requests"] == 0
    assert summary["B"]["healthy_flagged"] == 0  # real healthy pages are not loops
    # Client detector + server-side stop cut loops short; most shapes are caught.
    assert summary["E"]["loop_tokens_at_stop"] < 256
    # Every shape that is an exact repeat short enough for repetition_detection 16 (at most
    # 16 tokens, 4 copies within the cap) is caught by E, with or without the shared corpus:
    # the character runs, repeated words and short lines are always among them. Long blocks
    # and rows with changing numbers are not guaranteed at this small cap.
    sweep = report["by_shape"]
    exact = [i for i, shape in enumerate(sweep["shapes"]) if shape["exact_repeat_at"]]
    names = {sweep["shapes"][i]["name"] for i in exact}
    assert {"char-run", "two-chars"} <= names, sweep["shapes"]
    assert [i for i in exact if not sweep["arms"]["E"]["caught"][i]] == [], sweep
    assert summary_rows("tax", report)[0][0].startswith("tax arm A")
    assert "%" in summary_rows("tax", report)[0][1]


def test_floor_runs_between_the_arms_and_each_arm_is_measured_against_its_neighbours() -> None:
    arms = ("A", "B", "C", "D16", "E")
    assert arm_order(arms, 0) == list(arms)
    assert arm_order(arms, 0, floor_every=2) == ["B", "A", "C", "B", "D16", "E", "B"]
    assert arm_order(arms, 1, floor_every=2) == ["E", "D16", "B", "C", "A", "B"]
    # B at 10 s and 12 s around A (15 s): A is measured against their mean, 11 s.
    runs = [ArmRun(arm, 0, wall, 100.0, []) for arm, wall in (("B", 10), ("A", 15), ("B", 12))]
    summary = summarize(runs)
    assert summary["A"]["inflation_over_b"] == round(15 / 11 - 1, 4)
    assert summary["B"]["inflation_over_b"] == 0
    assert summary["B"]["floor_wall_spread"] == round(2 / 11, 4)


def test_validation_runs_quick_then_full_and_tables_every_arm() -> None:
    configs = validation_configs(2, 1, 3, ["--pages", "20", "--arms", "A,B,C"])
    assert [name for name, _ in configs] == ["q1", "q2", "full"]
    assert all(c.floor_every == 3 and not c.shape_sweep for _, c in configs)
    assert configs[0][1].workload.degenerate_share == 0.1 and configs[0][1].repeats == 1
    assert configs[2][1].workload.degenerate_share == 0.05 and configs[2][1].repeats == 1
    assert {c.workload.pages for _, c in configs} == {20}


def test_stops_table_sums_the_runs_and_lists_each_runs_figures() -> None:
    def figures(wall: float, after: int, recovered: int, stops: dict[str, int]) -> dict:
        return {
            "inflation_over_b": wall,
            "server_tokens": 1100,
            "server_tokens_over_b": 0.1,
            "loop_tokens_at_stop": 120,
            "abort_overshoot_tokens": after,
            "pages_recovered": recovered,
            "degenerate_pages": 2,
            "pages": 10,
            "healthy_flagged": 1,
            "loop_stops": stops,
        }

    runs = [
        {"run": "q1", "regimes": {"r": {"F": figures(0.02, 0, 2, {"engine_plugin": 2})}}},
        {"run": "q2", "regimes": {"r": {"F": figures(0.04, 5, 1, {"none": 1, "abort_call": 1})}}},
    ]
    row = stops_markdown(runs, "r").splitlines()[2]
    assert row == (
        "| F | +3.0% (+2, +4) | 1,100 (+10.0%) | 120 | 0, 5 | 3/4 | 2/16 "
        "| abort_call 1, engine_plugin 2, none 1 |"
    )


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


def test_profile_images_bench_sizes_each_profiles_image(tmp_path: Path) -> None:
    report = profile_images.run(rasterize.generated_pages(tmp_path, 2), "generated")

    arms = report["arms"]
    old = arms["old (200 DPI shrunk to 1288 px)"]
    # olmOCR renders straight to the old size; dots.ocr's 200 DPI is about 3x the pixels
    assert abs(arms["olmocr2"]["megapixels"] - old["megapixels"]) <= 0.02
    assert arms["dots-ocr-layout"]["tokens_over_old"] > 2.5
    assert all(row["seconds_per_page"] > 0 for row in arms.values())


def test_detector_speed_bench_sees_the_loops_it_streams() -> None:
    speed = detector.measure_speed(20_000, 16)

    assert speed["chars"] == 20_000 and speed["verdicts"] > 0
    assert summary_rows("detector", {"speed": speed})[0][1]


def test_every_registered_bench_is_callable() -> None:
    assert {"tax", "rasterize", "detector", "gpu"} <= set(BENCHES)
    assert all(callable(bench(name)) for name in BENCHES)


def test_detector_dev_set_is_built_from_the_shared_corpus(tmp_path: Path) -> None:
    import app.degeneration
    from bench.detector.devset_sources import healthy_texts, loop_prefixes
    from bench.detector.loop_shapes import SHAPES, build_samples
    from bench.detector.shapes import evaluate_healthy, evaluate_shapes

    shared = detector.shared_dir()
    if not (shared / "corpus" / "pdfs" / "manifest.jsonl").is_file():
        pytest.skip(f"shared corpus not found at {shared}")
    healthy = healthy_texts(shared, tmp_path, pages_per_pdf=1, tesseract=False)
    samples = build_samples(healthy + loop_prefixes(shared), per_shape=1)

    assert {s.shape for s in samples} == set(SHAPES)
    assert all(s.text.startswith(s.capped) and 0 < s.onset < len(s.capped) for s in samples)
    rows = evaluate_shapes(app.degeneration, samples)
    assert [row["shape"] for row in rows] == list(SHAPES)
    assert {row["origin"] for row in evaluate_healthy(app.degeneration, healthy[:5])}


def test_detector_baseline_loads_the_revision_before_issue_13() -> None:
    from bench.detector.baseline import BaselineUnavailable, load_baseline

    try:
        baseline = load_baseline(Path(__file__).resolve().parents[1])
    except BaselineUnavailable as exc:
        pytest.skip(str(exc))  # a shallow clone has no history
    assert baseline.LoopDetector().feed("It is what it is. " * 20) is not None
    assert not hasattr(baseline, "structure")  # the old package, not today's


def test_ocr_bench_reads_the_official_scorers_verdicts(tmp_path: Path) -> None:
    from bench.ocr.benchmark import lay_out_pages, results_table
    from bench.ocr.score import (
        category_sizes,
        failures_by_candidate,
        load_dataset,
        passes_per_category,
    )

    rows = [
        {"pdf": "a.pdf", "page": 1, "id": "a_1", "type": "present", "text": "x"},
        {"pdf": "a.pdf", "page": 1, "id": "a_2", "type": "table", "cell": "x"},
        {"pdf": "headers_footers/b.pdf", "page": 1, "id": "b_1", "type": "absent", "text": "y"},
    ]
    (tmp_path / "dataset.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    output = (
        "Candidate: folio\n  [FAIL] Test a_2 on a page 1 average pass ratio: 0.000 (0/1)\n"
        "  Average Score: 50.0%\n\nCandidate: olmocr\n  [ERROR] Candidate 'olmocr' is missing\n"
    )
    tests = load_dataset(tmp_path)
    failed = failures_by_candidate(output)

    assert failed == {"folio": {"a_2"}, "olmocr": None}
    assert passes_per_category(tests, failed["folio"]) == {
        "present": 1,
        "absent": 1,
        "headers_footers": 1,
        "total": 2,
    }
    assert passes_per_category(tests, failed["olmocr"]) == {}
    assert category_sizes(tests)["total"] == 3

    pdfs, out = tmp_path / "pdfs", tmp_path / "out"
    (pdfs / "headers_footers").mkdir(parents=True)
    out.mkdir()
    document = {
        "path": str(pdfs / "headers_footers" / "b.pdf"),
        "pages": [{"number": 1, "text": "y"}],
    }
    (out / "headers_footers__b.json").write_text(json.dumps(document))
    assert lay_out_pages(out, pdfs, tmp_path / "folio") == 1
    assert (tmp_path / "folio" / "headers_footers" / "b_pg1_repeat1.md").read_text() == "y"

    result = {
        "sizes": category_sizes(tests),
        "passed": {"folio": passes_per_category(tests, failed["folio"])},
        "seconds": {"folio": 1.0},
        "pages": 1,
    }
    console = Console(file=io.StringIO(), width=120)
    console.print(results_table(result))
    assert "2/3" in console.file.getvalue()  # type: ignore[attr-defined]


def test_orchestration_summary_shows_both_arms_side_by_side() -> None:
    arm = {"pages_per_s": 1.0, "overhead_ms_median": 2.0, "round_trips_per_page": 3.0}
    report = {"result": {"arms": {"baseline": arm, "current": arm}}}
    rows = summary_rows("orchestration", report)
    assert [what.split()[1] for what, _ in rows] == ["baseline", "current"]
    assert rows[0][1] == "1.0 / 2.0 / 3.0"


def test_kept_attempts_read_back_compressed_or_plain(tmp_path: Path) -> None:
    kept = {"runs": [{"run": "q1", "regimes": {"engine reniced": [{"arm": "A", "s": 1.5}]}}]}
    path = write_compressed("v_runs", kept, tmp_path)
    assert path.name == "v_runs.json.gz"
    assert read_results("v_runs", tmp_path) == kept
    assert path.read_bytes() == write_compressed("v_runs", kept, tmp_path).read_bytes()
    write_results("old_runs", kept, tmp_path)  # the form kept before 2026-11-26
    assert read_results("old_runs", tmp_path) == kept
    assert read_results("missing_runs", tmp_path) is None


@pytest.mark.vllm
def test_tax_validation_against_the_real_server(
    vllm_endpoint: VllmEndpoint, tmp_path: Path
) -> None:
    tiny = ["--pages", "12", "--degenerate-share", "0.2", "--max-tokens", "256"]
    tiny += ["--median-tokens", "32", "--concurrency", "4", "--arms", "A,B,E"]
    configs = validation_configs(1, 0, 1, tiny)
    kept: list[dict] = []
    report = run_validation(
        configs,
        vllm_endpoint.base_url,
        Console(file=io.StringIO()),
        on_run=lambda _report, attempts: kept.extend(attempts),
    )

    assert [(r["run"], r["arm"]) for r in report["rows"]] == [("q1", "A"), ("q1", "E")]
    assert all(r["estimate"] is not None and r["measured"] is not None for r in report["rows"])
    assert len(report["floor"][0]["walls_s"]) == 3  # B, A, B, E, B
    assert {s["arm"] for s in report["by_arm"]} == {"A", "E"}
    table = markdown(report)
    assert "| q1 |" in table and "within 10" in table
    # The attempts it keeps give the same figures again, through the file they are kept in.
    write_compressed("v_runs", {"runs": kept}, tmp_path)
    redone = reestimate(report, read_results("v_runs", tmp_path) or {})
    assert redone["rows"] == report["rows"]
