"""The detector bench's leave-one-source-out evaluation: folds, families and the choice of
thresholds never see the held-out source."""

import json
from pathlib import Path

import pytest

import app.degeneration
from bench.detector.heldout import (
    Sample,
    choose,
    evaluate_heldout,
    family_of,
    load_samples,
    source_key,
)
from bench.environment import shared_dir


def test_a_thread_is_one_fold_and_files_of_a_repository_are_one_fold() -> None:
    assert (
        source_key("https://github.com/vllm-project/vllm/issues/42016") == "vllm-project/vllm#42016"
    )
    assert source_key("https://github.com/vllm-project/vllm/pull/7905") == "vllm-project/vllm#7905"
    first = source_key("datalab-to/marker@7d20055:data/examples/nougat/a.md")
    second = source_key("datalab-to/marker@7d20055:data/examples/marker/b.md")
    assert first == second == "datalab-to/marker"
    assert source_key("allenai/olmocr:olmocr/bench/sample_data/x.md") == "allenai/olmocr"


def test_family_is_read_from_the_kind_of_a_loop_only() -> None:
    assert family_of("chat-template block loop with a counter", "degenerate") == "template echo"
    assert family_of("single line repeated", "degenerate") == "line repeat"
    assert family_of("single line repeated", "healthy") == "healthy"


def _sample(id: str, source: str, label: str, text: str) -> Sample:
    return Sample(id, source, label, False, family_of("line", label), text)


def test_the_variant_chosen_for_a_fold_ignores_that_fold() -> None:
    samples = [
        _sample("a", "s1", "degenerate", ""),
        _sample("b", "s2", "healthy", ""),
        _sample("c", "s3", "degenerate", ""),
    ]
    # `loose` catches both loops but flags the healthy sample of s2; `strict` catches s1 only.
    verdicts = {"strict": [True, False, False], "loose": [True, True, True]}
    assert choose(samples, verdicts, lambda i: True) == "strict"  # loose is over the FPR target
    assert choose(samples, verdicts, lambda i: samples[i].source != "s2") == "loose"


def test_heldout_report_on_a_small_corpus(tmp_path: Path) -> None:
    rows = [
        {"id": "loop", "label": "degenerate", "kind": "single line repeated", "note": "",
         "source": "https://github.com/o/r/issues/1", "text": "The pump stops at night.\n" * 20},
        {"id": "hard", "label": "degenerate", "kind": "sentence twice", "note": "hard case",
         "source": "https://github.com/o/r/issues/2", "text": "A short note."},
        {"id": "ok", "label": "healthy", "kind": "prose", "note": "",
         "source": "o/docs@abc:x.md", "text": "The river rose in May and fell in June."},
    ]  # fmt: skip
    (tmp_path / "degeneration_dev.jsonl").write_text(
        "\n".join(json.dumps(row) for row in rows), encoding="utf-8"
    )
    samples = load_samples(tmp_path)
    assert [s.hard for s in samples] == [False, True, False]
    report = evaluate_heldout(app.degeneration, samples)
    assert report["sources"] == 3
    assert report["held_out"]["recall_clear"] == 1.0  # the clear loop is caught held out
    assert report["held_out"]["recall_all"] == 0.5  # the hard one is not
    assert report["held_out"]["false_positive_rate"] == 0.0
    assert report["missed_held_out"] == ["hard (hard)"]


@pytest.mark.corpus
def test_the_targets_hold_out_of_sample_on_the_real_outputs() -> None:
    corpus = shared_dir() / "corpus"
    if not (corpus / "degeneration_dev_more.jsonl").is_file():
        pytest.skip(f"real outputs not found under {corpus}")
    report = evaluate_heldout(app.degeneration, load_samples(corpus))
    held_out = report["held_out"]
    assert held_out["recall_clear"] >= 0.95, report["missed_held_out"]
    assert held_out["false_positive_rate"] <= 0.02, report["false_positives_held_out"]
