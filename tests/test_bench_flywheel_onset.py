"""The dose study's per-run diagnosis (`bench/flywheel/onset.py`) on the tiny Qwen2-VL: a tuned
model that is the base moves nothing, side by side, and the loop's onset is scored where the
rejected answer's verdict puts it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_train_dpo import TINY, train_extra_or_skip
from tests.train_support import write_pairs_folder


def test_a_model_diagnosed_against_itself_moves_nothing(tmp_path: Path) -> None:
    train_extra_or_skip()
    from bench.flywheel import onset

    pairs = write_pairs_folder(tmp_path / "pairs" / "truth-validation", 2)
    rows = [json.loads(line) for line in (pairs / "train.jsonl").read_text().splitlines()]
    for row in rows:
        row["metadata"]["rejected_verdict"] |= {"onset": 5, "period": 3}  # "Page 1 09 ..."
    (pairs / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "models").mkdir()
    for name in ("base", "same"):
        (tmp_path / "models" / name).symlink_to(TINY)
    found = onset.diagnose(tmp_path, "same", beta=0.1)
    assert found["pairs"] == found["onset_pairs"] == 2
    assert found["chosen_change_mean"] == found["rejected_change_mean"] == 0
    assert found["reward_margin_mean"] == 0 and found["reward_accuracy"] == 0
    assert found["onset_logprob_tuned"] == found["onset_logprob_base"] < 0
    assert found["onset_less_likely_share"] == 0
    assert onset.onset_span(rows[0]) == (5, 8)
    rows[0]["metadata"]["rejected_verdict"].pop("period")
    assert onset.onset_span(rows[0]) is None  # no onset to score: the pair counts for the margin


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
