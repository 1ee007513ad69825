"""The plugin as vLLM builds it (in the vLLM venv): one working instance where vLLM builds two,
and a refusal to start where async scheduling would leave it blind."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.vllm_cpu.fixtures import vllm_required
from tests.vllm_cpu.server import REPO_ROOT, default_model_dir, default_venv, missing_prerequisites

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def found() -> dict:
    reason = missing_prerequisites()
    if reason:
        if vllm_required():
            pytest.fail(reason)
        pytest.skip(reason)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {
        "PYTHONPATH": str(REPO_ROOT)
    }
    python = str(default_venv() / "bin" / "python")
    done = subprocess.run(
        [python, "-m", "tests.vllm_cpu.plugin_instances", str(default_model_dir())],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_only_the_last_instance_built_ends_requests(found: dict) -> None:
    # vLLM builds the entry-point instance first, then the --logits-processors one.
    assert found["ended_by"] == [False, True]


def test_it_refuses_to_start_blind_under_async_scheduling(found: dict) -> None:
    assert "placeholder token ids" in found["refused_entry_point_async"]
    assert found["refused_named_async"] is None
