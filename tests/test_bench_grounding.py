"""`python -m bench detector-grounding` on a few pages a source: it runs where the mirrors and
../shared are absent (their pages are then judged unpaired or left out), and grounding never
adds a false alarm nor clears a loop it pairs with a page."""

from __future__ import annotations

from pathlib import Path

from bench.detector import grounding


def test_the_grounding_bench_runs_and_grounding_only_removes_verdicts(tmp_path: Path) -> None:
    out = tmp_path / "grounding.json"
    report = grounding.main(["--limit", "12", "--no-ocr-cost", "--out", str(out)])

    assert out.is_file()
    corpus = report["false_alarms"]["pooled: corpus"]
    assert corpus["pages"] > 0 and corpus["grounded"] <= corpus["alone"]
    for row in report["flagged"]:
        assert row["alone"] is not None  # a grounded verdict is one the detector alone gave
    for pairing in report["loops"].values():
        assert pairing["caught_grounded"] == pairing["caught_alone"] == pairing["loops"]


def test_the_detector_bench_leads_with_the_frozen_figure_and_the_grounded_ones() -> None:
    from bench.detector.headline import headline
    from bench.healthy_corpus.harvest_sources import FREEZE_COMMIT

    found = headline()

    assert found["frozen"]["freeze_commit"] == FREEZE_COMMIT and found["frozen"]["pages"] >= 1000
    harvested = found["grounding"]["harvested"]
    assert harvested["grounded_per_1000"] <= harvested["alone_per_1000"]
