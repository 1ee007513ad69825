"""The memory preflight of `folio train-dpo`: the estimate as arithmetic, the decision as a
table, and the estimate against peaks measured on real runs (CPU here, the H200 in
shared/notes/gpu.md section 3)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from app.errors import TrainMemoryError
from app.train.memory import (
    GIB,
    Run,
    Shapes,
    estimate,
    lora_parameters,
    text_parameters,
    text_shape,
    vision_parameters,
    vision_shape,
)
from app.train.preflight import HEADROOM, fit_batch
from tests.test_train_dpo import TINY, train_extra_or_skip
from tests.train_support import write_pairs_folder


def qwen2_vl(hidden: int, layers: int, mlp: int, heads: int, kv: int, vocab: int) -> dict:
    """A Qwen2-VL config of the given text shape with the real models' vision tower."""
    return {
        "model_type": "qwen2_vl",
        "tie_word_embeddings": False,
        "text_config": {
            "hidden_size": hidden,
            "num_hidden_layers": layers,
            "intermediate_size": mlp,
            "num_attention_heads": heads,
            "num_key_value_heads": kv,
            "vocab_size": vocab,
        },
        "vision_config": {
            "depth": 32,
            "embed_dim": 1280,
            "num_heads": 16,
            "mlp_ratio": 4,
            "hidden_size": hidden,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "in_channels": 3,
        },
    }


QWEN2_VL_2B = qwen2_vl(1536, 28, 8960, 12, 2, 151936)
QWEN2_VL_7B = qwen2_vl(3584, 28, 18944, 28, 4, 152064)
# The H200 runs' pages: 1000 x 1288 px, i.e. 36 x 46 merged patches at Qwen2-VL's default
# budget; ~2,400-character chosen and ~3,600-character rejected sides (about 3.1 characters
# a token with the test tokenizer). gpu.md does not record the token counts: these are derived.
H200_PAGES = Shapes(
    prompt_tokens=1656 + 34, image_tokens=1656, completion_tokens=1165, patches=6624
)


def parameters(config: dict) -> int:
    text = text_shape(config)
    return text_parameters(text) + vision_parameters(vision_shape(config, text))


def test_parameter_counts_match_the_models() -> None:
    tiny = (
        json.loads((TINY / "folio-recipe.json").read_text())["parameters"]
        if TINY.is_dir()
        else None
    )
    if tiny is not None:
        config = json.loads((TINY / "config.json").read_text())
        assert parameters(config) == tiny
    # gpu.md section 3: 2.44 B and 8.29 B parameters with the real vocabulary.
    assert round(parameters(QWEN2_VL_2B) / 1e9, 2) == 2.44
    assert round(parameters(QWEN2_VL_7B) / 1e9, 2) == 8.29
    # LoRA r16 on the 7 projections of 28 layers of the 2B shape.
    per_layer = 16 * ((1536 + 1536) * 2 + (1536 + 256) * 2 + (1536 + 8960) * 3)
    assert lora_parameters(text_shape(QWEN2_VL_2B), 16) == 28 * per_layer


def with_vocab(config: dict, vocab: int) -> dict:
    return {**config, "text_config": {**config["text_config"], "vocab_size": vocab}}


# As those runs ran: float32 adapters (PEFT's default) and the vision tower's require-grad hook
# left on (Folio's trainer now changes both), checkpointing on, max_length 6144.
AS_RUN = Run(
    "cuda",
    "lora",
    batch_size=4,
    max_length=6144,
    gradient_checkpointing=True,
    adapter_bytes=4,
    vision_hook=True,
)


@pytest.mark.parametrize(
    ("config", "batch", "measured_gb"),
    [
        (with_vocab(QWEN2_VL_2B, 16384), 4, 23.7),
        (with_vocab(QWEN2_VL_2B, 16384), 1, 9.5),
        (QWEN2_VL_2B, 4, 24.6),
        (QWEN2_VL_7B, 1, 26.5),
    ],
)
def test_estimate_lands_near_the_h200_peaks(config: dict, batch: int, measured_gb: float) -> None:
    estimated = estimate(config, H200_PAGES, replace(AS_RUN, batch_size=batch)).total / 1e9
    assert estimated == pytest.approx(measured_gb, rel=0.25)


def test_the_h200_default_run_did_not_fit_and_the_new_defaults_shrink_it() -> None:
    config = with_vocab(QWEN2_VL_2B, 16384)
    no_ckpt = estimate(config, H200_PAGES, replace(AS_RUN, gradient_checkpointing=False))
    assert no_ckpt.total > 120 * GIB  # out of memory with 127 GiB allocated on a 139 GiB card
    new = replace(AS_RUN, adapter_bytes=2, vision_hook=False)
    assert (
        estimate(config, H200_PAGES, new).total < 0.7 * estimate(config, H200_PAGES, AS_RUN).total
    )


def test_activations_grow_with_the_batch_and_checkpointing_cuts_them() -> None:
    small, double = (
        estimate(QWEN2_VL_2B, H200_PAGES, replace(AS_RUN, batch_size=b)).parts["activations"]
        for b in (1, 2)
    )
    assert double == 2 * small
    plain = replace(AS_RUN, gradient_checkpointing=False)
    assert estimate(QWEN2_VL_2B, H200_PAGES, plain).parts["activations"] > 5 * double
    full = estimate(QWEN2_VL_2B, H200_PAGES, replace(AS_RUN, method="full"))
    assert full.parts["reference model"] == full.parts["weights"]


def test_a_shorter_max_length_or_smaller_images_shrink_the_estimate() -> None:
    base = estimate(QWEN2_VL_2B, H200_PAGES, AS_RUN).total
    assert estimate(QWEN2_VL_2B, H200_PAGES, replace(AS_RUN, max_length=2000)).total < base
    fewer = H200_PAGES.with_image_tokens(414)
    assert (fewer.prompt_tokens, fewer.patches) == (414 + 34, 414 * 4)
    assert estimate(QWEN2_VL_2B, fewer, AS_RUN).total < base


DEFAULTS_24GB = Run("cuda", "lora", batch_size=4, max_length=6144, gradient_checkpointing=True)


@pytest.mark.parametrize(
    ("free_gib", "asked", "expected"),
    [
        (139, (4, 1), (4, 1)),  # fits as asked
        (24, (4, 1), (4, 1)),  # the new defaults fit a 24 GB card at batch 4
        (12, (4, 1), (2, 2)),  # same effective batch, two steps accumulated
        (12, (4, 3), (2, 6)),
        (9, (4, 1), (1, 4)),
        (3, (4, 1), None),  # below the weights: refused
    ],
)
def test_preflight_fits_the_batch_or_refuses(
    free_gib: float, asked: tuple[int, int], expected: tuple[int, int] | None
) -> None:
    run = replace(DEFAULTS_24GB, batch_size=asked[0])
    free = int(free_gib * GIB)
    if expected is None:
        with pytest.raises(TrainMemoryError) as refused:
            fit_batch(QWEN2_VL_2B, H200_PAGES, run, asked[1], free)
        assert "one pair a step needs about" in str(refused.value)
        return
    fit = fit_batch(QWEN2_VL_2B, H200_PAGES, run, asked[1], free)
    assert (fit.batch_size, fit.grad_accum) == expected
    assert fit.estimate.total <= free * HEADROOM
    if expected != asked:
        assert f"training at batch {expected[0]} x accumulation {expected[1]}" in fit.note


def test_a_refusal_says_what_would_fit() -> None:
    run = replace(DEFAULTS_24GB, batch_size=1)
    free = int(7.8 * GIB)  # one pair of these pages needs about 7.6 GiB, 90% of 7.8 is 7.0
    with pytest.raises(TrainMemoryError) as refused:
        fit_batch(QWEN2_VL_2B, H200_PAGES, run, 1, free)
    message = str(refused.value)
    budget = free * HEADROOM
    tokens = int(re.search(r"--max-image-tokens (\d+)", message).group(1))  # type: ignore[union-attr]
    assert estimate(QWEN2_VL_2B, H200_PAGES.with_image_tokens(tokens), run).total <= budget
    assert estimate(QWEN2_VL_2B, H200_PAGES.with_image_tokens(tokens + 1), run).total > budget
    length = int(re.search(r"--max-length (\d+)", message).group(1))  # type: ignore[union-attr]
    assert estimate(QWEN2_VL_2B, H200_PAGES, replace(run, max_length=length)).total <= budget
    assert estimate(QWEN2_VL_2B, H200_PAGES, replace(run, max_length=length + 1)).total > budget
    plain = replace(run, gradient_checkpointing=False)
    with pytest.raises(TrainMemoryError) as without:
        fit_batch(QWEN2_VL_2B, H200_PAGES, plain, 1, int(9 * GIB))
    assert "What would fit: --gradient-checkpointing" in str(without.value)
    with pytest.raises(TrainMemoryError) as hopeless:  # 16.6 GB of weights
        fit_batch(QWEN2_VL_7B, H200_PAGES, run, 1, free)
    assert "What would fit: a larger device" in str(hopeless.value)


def test_a_config_the_estimate_cannot_read_is_not_checked() -> None:
    sparse = {"model_type": "llava", "text_config": {"model_type": "llama"}, "vision_config": {}}
    fit = fit_batch(sparse, H200_PAGES, DEFAULTS_24GB, 1, int(24 * GIB))
    assert fit.batch_size == 4 and fit.note.startswith("not estimated: the model's config has no")


def test_unknown_free_memory_is_not_checked() -> None:
    fit = fit_batch(QWEN2_VL_7B, H200_PAGES, DEFAULTS_24GB, 1, None)
    assert (fit.batch_size, fit.note) == (4, "free memory unknown: not checked")


def train_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from app.cli.main import main; main()", "train-dpo", *args]
    # One thread: on a busy 2-core machine a second torch thread only spins.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1", "COLUMNS": "200"}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_estimate_within_a_quarter_of_a_measured_cpu_peak(tmp_path: Path) -> None:
    """A real run in its own process, so its memory rise is its own (not reused pages)."""
    train_extra_or_skip()
    pairs = write_pairs_folder(tmp_path / "pairs", 6)
    out = tmp_path / "tuned"
    args = [str(pairs), "--base-model", str(TINY), "--out", str(out), "--device", "cpu"]
    done = train_cli(*args, "--max-steps", "2", "--batch-size", "2", "--held-out", "0")
    assert done.returncode == 0, done.stderr[-3000:]
    memory = json.loads((out / "training_card.json").read_text())["memory"]
    measured, estimated = memory["measured_peak_bytes"], memory["preflight"]["estimated_peak_bytes"]
    assert memory["measured_by"].startswith("VmHWM")
    assert estimated == pytest.approx(measured, rel=0.25), memory
    assert memory["preflight"]["batch_size"] == 2 and "estimated peak" in done.stderr


def test_a_small_budget_lowers_the_batch_and_a_tiny_one_refuses(tmp_path: Path) -> None:
    train_extra_or_skip()
    pairs = write_pairs_folder(tmp_path / "pairs", 6)
    args = [str(pairs), "--base-model", str(TINY), "--device", "cpu", "--held-out", "0"]
    refused = train_cli(*args, "--out", str(tmp_path / "none"), "--memory-budget", "0.05")
    assert refused.returncode == 4, refused.stderr[-2000:]
    assert "not enough memory" in refused.stderr and not (tmp_path / "none").exists()
    # Room for one pair a step but not four (the tiny model: ~0.3 GiB a step at batch 1).
    out = tmp_path / "tuned"
    done = train_cli(
        *args, "--out", str(out), "--memory-budget", "0.5", "--max-steps", "1",
        "--gradient-checkpointing",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    memory = json.loads((out / "training_card.json").read_text())["memory"]
    assert memory["vision_hooks_released"] >= 1, "the frozen tower left out of the backward"
    preflight = memory["preflight"]
    assert preflight["batch_size"] * preflight["grad_accum"] == 4 and preflight["batch_size"] < 4
    assert f"training at batch {preflight['batch_size']}" in " ".join(done.stderr.split())
