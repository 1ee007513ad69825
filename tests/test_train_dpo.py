"""`folio train-dpo`: input checked before any training step, and a run on the tiny Qwen2-VL
that leaves a complete, servable folder with its training card and held-out pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from tests.train_support import write_pairs_folder
from tests.vllm_cpu.server import default_model_dir

TINY = default_model_dir()


def train_extra_or_skip() -> None:
    """The training extra and the tiny model; in CI their absence is a failure."""
    try:
        import trl  # noqa: F401
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"folio[train] is required in CI: {exc}")
        pytest.skip(f"folio[train] not installed: {exc}")
    if not (TINY / "config.json").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"tiny model missing at {TINY}")
        pytest.skip(f"no tiny model at {TINY}")


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["train-dpo", *args])
    return result.exit_code, " ".join(result.output.split())  # rich wraps long lines


def test_cli_help_and_import_do_not_load_torch() -> None:
    code = (
        "import sys\nfrom typer.testing import CliRunner\nfrom app.cli.main import app\n"
        "CliRunner().invoke(app, ['train-dpo', '--help'])\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'trl', 'peft') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_pairs_is_an_error_before_training(tmp_path: Path) -> None:
    empty = tmp_path / "pairs"
    empty.mkdir()
    (empty / "train.jsonl").write_text("")
    code, output = invoke(str(empty), "--base-model", str(TINY), "--out", str(tmp_path / "m"))
    assert code == 4 and "no pairs" in output
    code, output = invoke(str(tmp_path / "nowhere"), "--base-model", str(TINY), "-o", "x")
    assert code == 4 and "no train.jsonl" in output


def test_missing_images_are_named(tmp_path: Path) -> None:
    pairs = write_pairs_folder(tmp_path / "pairs", 3)
    (pairs / "images" / "job-a-2.png").unlink()
    code, output = invoke(str(pairs), "--base-model", str(TINY), "--out", str(tmp_path / "m"))
    assert code == 4 and "1 image(s) of the pairs are missing" in output
    assert "job-a-2.png" in output
    assert not (tmp_path / "m").exists()


def test_a_text_only_base_model_is_refused(tmp_path: Path) -> None:
    pairs = write_pairs_folder(tmp_path / "pairs", 3)
    base = tmp_path / "llm"
    base.mkdir()
    (base / "config.json").write_text(json.dumps({"model_type": "qwen2", "hidden_size": 64}))
    code, output = invoke(str(pairs), "--base-model", str(base), "--out", str(tmp_path / "m"))
    assert code == 4 and "not a vision-language model" in output


def test_too_few_pairs_for_a_batch(tmp_path: Path) -> None:
    pairs = write_pairs_folder(tmp_path / "pairs", 4)
    args = [str(pairs), "--base-model", str(TINY), "--out", str(tmp_path / "m")]
    code, output = invoke(*args, "--batch-size", "4")
    assert code == 4 and "fewer than one batch of 4" in output


def test_no_loss_term_is_refused(tmp_path: Path) -> None:
    pairs = write_pairs_folder(tmp_path / "pairs", 10)
    args = [str(pairs), "--base-model", str(TINY), "--out", str(tmp_path / "m")]
    code, output = invoke(*args, "--dpo-weight", "0", "--sft-weight", "0")
    assert code == 4 and "--dpo-weight and --sft-weight are both 0" in output


def test_the_default_loss_is_dpo_with_the_sft_term_the_dose_study_chose() -> None:
    """DPO plus an SFT term on the chosen side held in every training seed on the flywheel
    bench where plain DPO held in one of three (docs/training.md); plain DPO is one option."""
    from app.train.options import TrainOptions

    assert TrainOptions().losses() == [("sigmoid", 1.0), ("sft", 1.0)]
    assert TrainOptions().loss_text() == "DPO beta 0.1 + SFT"
    assert TrainOptions(sft_weight=0).loss_text() == "DPO beta 0.1 only"
    assert TrainOptions(dpo_weight=0, sft_weight=0.5).loss_text() == "SFT x0.5 only"
    code, output = invoke("--help")
    assert code == 0 and "[default: 1.0]" in output.split("--sft-weight")[1].split("--dpo")[0]


def test_max_length_that_cuts_the_image_is_refused(tmp_path: Path) -> None:
    train_extra_or_skip()
    pairs = write_pairs_folder(tmp_path / "pairs", 5)
    out = tmp_path / "m"
    args = [str(pairs), "--base-model", str(TINY), "--out", str(out), "--batch-size", "2"]
    code, output = invoke(*args, "--max-length", "32")
    assert code == 4 and "would cut the image tokens" in output
    assert not out.exists() and not list(tmp_path.glob("m.partial-*"))


def test_lora_run_writes_a_complete_servable_folder(tmp_path: Path) -> None:
    train_extra_or_skip()
    pairs = write_pairs_folder(tmp_path / "pairs", 10, healthy=3)
    out = tmp_path / "tuned"
    args = [str(pairs), "--base-model", str(TINY), "--out", str(out), "--device", "cpu"]
    code, output = invoke(
        *args, "--max-steps", "4", "--learning-rate", "5e-4", "--held-out", "0.2",
        "--gate-max-tokens", "48",
    )  # fmt: skip
    assert code == 0, output
    _check_gate(out, output)
    for name in ("config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"):
        assert (out / name).is_file(), name
    flat = json.loads((out / "preprocessor_config.json").read_text())
    assert flat["image_processor_type"] == "Qwen2VLImageProcessor"
    assert json.loads((out / "tokenizer_config.json").read_text())["tokenizer_class"] == (
        "Qwen2Tokenizer"
    )
    card = json.loads((out / "training_card.json").read_text())
    held = json.loads((out / "held_out_pages.json").read_text())
    assert len(held) == 2 and card["pairs"]["train"] == 8 and card["pairs"]["held_out"] == 2
    trained_pages = 10 - len(held)
    assert sum(card["pairs"]["by_loop_kind"].values()) == trained_pages
    assert card["pairs"]["by_chosen_source"] == {"vlm:penalized": trained_pages}
    assert [row["step"] for row in card["curves"]] == [1.0, 2.0, 3.0, 4.0]
    assert all("rewards/margins" in row for row in card["curves"])
    assert set(card["data"]["sha256"]) == {str(pairs / "train.jsonl"), "images"}
    assert (out / "training_curves.svg").read_text().count("<polyline") == 3
    assert not list(tmp_path.glob("tuned.*")), "no partial or old folder left beside it"
    config = json.loads((out / "config.json").read_text())
    assert config["dtype"] == "bfloat16" and "lora" not in (out / "config.json").read_text()


def _check_gate(out: Path, output: str) -> None:
    """The gate read the 2 held-out pairs' pages and the 3 healthy ones with both models, and
    its verdict follows from the readings it wrote."""
    from app.train.gate import PageReading, decide

    verdict = json.loads((out / "gate_verdict.json").read_text())
    assert verdict["reading"]["pages_by_origin"] == {"looped": 2, "healthy": 3}
    assert len(verdict["pages"]) == 5
    base = [PageReading(**row["base"]) for row in verdict["pages"]]
    tuned = [PageReading(**row["tuned"]) for row in verdict["pages"]]
    assert all(0 < r.tokens <= 48 for r in [*base, *tuned])
    again = decide(base, tuned)
    assert verdict["decision"] == again.decision and verdict["reasons"] == list(again.reasons)
    card = json.loads((out / "training_card.json").read_text())
    assert card["gate"]["decision"] == verdict["decision"]
    said = "promote the tuned model" if again.promote else "keep the base model"
    assert f"Gate: {said}" in output
    assert said.capitalize() in (out / "GATE_VERDICT.md").read_text()


def test_a_tuned_model_no_better_than_its_base_is_kept_out(tmp_path: Path) -> None:
    """The gate end to end on the tiny base: a "tuned" model that is the base itself reads
    every page as the base does, so it is refused, never called an improvement."""
    train_extra_or_skip()
    from app.train.gate_run import run_gate
    from app.train.options import GateOptions, TrainOptions
    from app.train.run import prepare

    pairs = write_pairs_folder(tmp_path / "pairs", 6, healthy=2)
    options = TrainOptions(held_out_share=0.34, batch_size=1)
    plan = prepare([pairs], TINY, tmp_path / "tuned", options, force=False)
    dest = tmp_path / "verdict"
    dest.mkdir()
    gate = GateOptions(max_tokens=32)
    verdict = run_gate(plan, gate, TINY, "cpu", notify=lambda _: None, dest=dest)
    assert not verdict.promote and verdict.reasons[0].startswith("loops no less")
    assert (verdict.fixed, verdict.made) == (0, 0)
    assert verdict.base == verdict.tuned and verdict.base.pages == 4
    assert "Keep the base model" in (dest / "GATE_VERDICT.md").read_text()


def test_a_page_exported_by_two_jobs_is_held_out_or_trained_on_never_both(
    tmp_path: Path,
) -> None:
    from app.train.pairs import held_out_pages, load_pairs, split_held_out

    first = write_pairs_folder(tmp_path / "a", 10, job_id="job-a")
    second = write_pairs_folder(tmp_path / "b", 10, job_id="job-b")
    split = split_held_out(load_pairs([first, second]), share=0.2, seed=7)
    held = {p.page_key for p in split.held_out}
    assert len(held) == 2 and not held & {p.page_key for p in split.train}
    assert len(split.held_out) == 4 and len(split.train) == 16
    listed = held_out_pages(split.held_out)
    assert [len(entry["page_ids"]) for entry in listed] == [2, 2]
    assert split_held_out(load_pairs([first, second]), 0.2, seed=7) == split, "deterministic"


def test_several_seeds_train_on_one_split_and_the_gate_keeps_one(tmp_path: Path) -> None:
    """`--seeds 2`: two runs on the same held-out pages, the card lists both gate verdicts
    and the kept seed is the one the rank puts first; nothing of the other run is left."""
    train_extra_or_skip()
    from app.train.seeds import rank

    pairs = write_pairs_folder(tmp_path / "pairs", 10, healthy=3)
    out = tmp_path / "tuned"
    args = [str(pairs), "--base-model", str(TINY), "--out", str(out), "--device", "cpu"]
    code, output = invoke(
        *args, "--max-steps", "2", "--learning-rate", "5e-4", "--held-out", "0.2",
        "--gate-max-tokens", "32", "--seeds", "2", "--seed", "7",
    )  # fmt: skip
    assert code == 0, output
    card = json.loads((out / "training_card.json").read_text())
    assert [row["seed"] for row in card["seeds"]] == [7, 8]
    assert {row["pages"] for row in card["seeds"]} == {5}  # the same held-out pages
    cards = [{"gate": {"decision": r["decision"], "tuned": r}} for r in card["seeds"]]
    best = min(range(2), key=lambda i: rank(cards[i]))
    assert card["chosen_seed"] == card["seeds"][best]["seed"]
    assert card["dose"] == {"pairs": 8, "recommended": 100, "below": True}
    assert "below the 100" in output
    assert f"kept: seed {card['chosen_seed']}" in (out / "TRAINING_CARD.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs", "tuned"]


def test_several_seeds_need_the_gate(tmp_path: Path) -> None:
    train_extra_or_skip()
    pairs = write_pairs_folder(tmp_path / "pairs", 10, healthy=3)
    args = [str(pairs), "--base-model", str(TINY), "--out", str(tmp_path / "t")]
    code, output = invoke(*args, "--seeds", "3", "--no-gate", "--device", "cpu")
    assert code != 0 and "--seeds needs the promotion gate" in output
