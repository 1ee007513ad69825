"""The plugin's logits writes: the fills it uses give what the old scalar writes gave."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from app.vllm_plugin.logits import ban, force_eos  # noqa: E402


def test_force_eos_leaves_only_eos_possible_in_that_row() -> None:
    logits = torch.randn(4, 50)
    expected = logits.clone()
    expected[2] = float("-inf")
    expected[2, 7] = 0.0

    force_eos(logits, 2, 7)

    assert torch.equal(logits, expected)


def test_ban_makes_exactly_those_tokens_impossible_in_that_row() -> None:
    logits = torch.randn(4, 50)
    expected = logits.clone()
    expected[1, [3, 9, 40]] = float("-inf")

    ban(logits, 1, frozenset({40, 3, 9}))

    assert torch.equal(logits, expected)
