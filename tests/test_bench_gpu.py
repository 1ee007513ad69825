"""`python -m bench gpu --dry-run`: every part runs at toy sizes and writes the JSON CI reads."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

pytest.importorskip("torch")

from bench.gpu import benchmark as gpu
from tests.test_train_dpo import train_extra_or_skip


def test_the_dry_run_writes_every_part_with_its_figures(tmp_path: Path) -> None:
    """The training part too: every arm through the real trainer on CPU, small (one dry run
    serves both, as `python -m bench gpu --dry-run` runs it)."""
    train_extra_or_skip()
    from bench.gpu.train import ARMS, DRY_STEPS

    out = tmp_path / "gpu.json"

    gpu.run_parts(dry_run=True, out=out)

    report = json.loads(out.read_text())
    assert report["dry_run"] is True and "cpus" in report["host"]
    assert not [name for name, part in report.items() if isinstance(part, dict) and "error" in part]
    rows = report["decode_floor"]["rows"]
    assert {row["batch"] for row in rows} == {2, 4} and all(row["step_ms"] > 0 for row in rows)
    cost = report["stop_engine_cost"]["4"]
    assert cost["plugin_today_us_per_step"] > 0 and cost["client_stop_us_per_step"] == 0
    writes = report["logits_writes"]
    assert {"force_eos (fills)", "ban (index_fill_)"} <= set(writes)
    assert report["client_parse"]["tokens"] > 0 and report["client_parse"]["us_per_token"] > 0
    train = report["train"]
    assert train["dry_run"] is True and train["device"] == "cpu"
    assert set(train["arms"]) == set(ARMS)
    for label, arm in train["arms"].items():
        assert arm["model"] == ARMS[label][0] and arm["steps"] == DRY_STEPS
        assert arm["peak_bytes"] > arm["parameters"] * 4, "weights are float32 on CPU"
        # Structure only: in a shared process the resident-set rise undercounts pages reused
        # from earlier work; test_train_memory measures a run in its own process against 25%.
        assert 0.5 <= arm["estimate_over_measured"] <= 2.0, (label, arm)
        assert arm["tokens"] > 0 and arm["tokens_per_s"] > 0
        assert arm["shapes"]["image_tokens"] > 0 and arm["batch_size"] * arm["grad_accum"] == 4
    adapters = {arm["options"]["adapter_dtype"] for arm in train["arms"].values()}
    assert adapters == {"model", "float32"}
    before = train["arms"]["2b as before"]["options"]
    assert before == {"adapter_dtype": "float32", "release_frozen_vision": False, "lora_rank": 16}


def test_a_failing_part_is_recorded_and_the_others_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(dry_run: bool) -> dict:
        raise RuntimeError("no such kernel")

    monkeypatch.setattr(gpu.gpu_parts, "decode_floor", broken)
    out = tmp_path / "gpu.json"

    gpu.run_parts(dry_run=True, out=out, only=["decode_floor", "client_parse"])

    report = json.loads(out.read_text())
    assert report["decode_floor"]["error"] == "RuntimeError: no such kernel"
    assert report["client_parse"]["us_per_token"] > 0
    assert "logits_writes" not in report


def test_a_training_part_joins_when_its_module_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("bench.gpu.train")
    module.run = lambda dry_run: {"dry_run": dry_run}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bench.gpu.train", module)

    names = [name for name, _ in gpu.parts()]

    assert names[-1] == "train" and names[:4] == [
        "decode_floor",
        "stop_engine_cost",
        "logits_writes",
        "client_parse",
    ]
