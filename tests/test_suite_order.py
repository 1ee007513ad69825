"""The order `make test` hands its groups out in (tests/conftest.py) names real groups: a
module renamed or removed would drop out of the order silently and go out last again."""

from __future__ import annotations

from tests.conftest import LONGEST_FIRST
from tests.vllm_cpu.server import REPO_ROOT


def test_every_group_ordered_first_is_a_module_or_a_server_group() -> None:
    modules = [group for group in LONGEST_FIRST if group.startswith("tests/")]
    assert [REPO_ROOT / m for m in modules if not (REPO_ROOT / m).is_file()] == []
    assert set(LONGEST_FIRST) - set(modules) == {"vllm", "vllm-dev-speculative"}
