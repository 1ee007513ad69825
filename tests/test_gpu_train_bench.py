"""The GPU training bench in dry mode: every arm runs through the real trainer on CPU, small."""

from __future__ import annotations

import pytest

from tests.test_train_dpo import train_extra_or_skip


@pytest.mark.slow
def test_dry_run_reports_every_arm_with_its_estimate_beside_its_peak() -> None:
    train_extra_or_skip()
    from bench.gpu.train import ARMS, DRY_STEPS, run

    report = run(dry_run=True)
    assert report["dry_run"] is True and report["device"] == "cpu"
    assert set(report["arms"]) == set(ARMS)
    for label, arm in report["arms"].items():
        assert arm["model"] == ARMS[label][0] and arm["steps"] == DRY_STEPS
        assert arm["peak_bytes"] > arm["parameters"] * 4, "weights are float32 on CPU"
        # Structure only: in a shared process the resident-set rise undercounts pages reused
        # from earlier work; test_train_memory measures a run in its own process against 25%.
        assert 0.5 <= arm["estimate_over_measured"] <= 2.0, (label, arm)
        assert arm["tokens"] > 0 and arm["tokens_per_s"] > 0
        assert arm["shapes"]["image_tokens"] > 0 and arm["batch_size"] * arm["grad_accum"] == 4
    adapters = {arm["options"]["adapter_dtype"] for arm in report["arms"].values()}
    assert adapters == {"model", "float32"}
    before = report["arms"]["2b as before"]["options"]
    assert before == {"adapter_dtype": "float32", "release_frozen_vision": False, "lora_rank": 16}
