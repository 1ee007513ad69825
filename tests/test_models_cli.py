"""`folio models`, `folio doctor`'s verdicts, and docs/models.md kept in step with the code."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from app.cli.main import app
from app.profiles import BUILTIN
from app.profiles.diagnosis import diagnose

DOCS = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text(encoding="utf-8")
NO_STOPS = (False, False, False)


def test_models_lists_every_profile_with_its_serve_line() -> None:
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0, result.output
    for profile in BUILTIN.values():
        assert f"{profile.id}  {profile.status}" in result.output
    assert (
        "vllm serve deepseek-ai/DeepSeek-OCR --logits-processors "
        "vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor"
    ) in result.output


def test_models_shows_one_profile_with_its_sources() -> None:
    result = CliRunner().invoke(app, ["models", "olmocr2"])
    assert result.exit_code == 0, result.output
    assert "source of prompt: allenai/olmocr@f7cfe4c2:olmocr/prompts/prompts.py" in result.output
    assert "Attached is one page of a document" in result.output
    unknown = CliRunner().invoke(app, ["models", "nope"])
    assert unknown.exit_code == 5 and "Unknown profile 'nope'" in unknown.output


def test_doctor_says_what_is_wrong_in_plain_words() -> None:
    deepseek = BUILTIN["deepseek-ocr"]
    served = {"deepseek-ai/DeepSeek-OCR": 4096}
    findings = diagnose(
        deepseek, "deepseek-ai/DeepSeek-OCR", served, NO_STOPS, {"ngram_processor": False}
    )
    problems = [f.text for f in findings if f.level == "problem"]
    assert any("max_model_len is 4096" in t and "--max-model-len 12288" in t for t in problems)
    assert any("NGramPerReqLogitsProcessor" in t for t in problems)
    assert any("no server-side loop stop" in f.text for f in findings if f.level == "warning")
    healthy = diagnose(
        deepseek,
        "deepseek-ai/DeepSeek-OCR",
        {"deepseek-ai/DeepSeek-OCR": 16384},
        (True, False, False),
        {"ngram_processor": True},
    )
    assert {f.level for f in healthy} == {"ok"}


def test_doctor_warns_about_a_profile_made_for_another_model_and_experimental_ones() -> None:
    findings = diagnose(BUILTIN["dharma"], "x/other", {"x/other": 32768}, NO_STOPS, {})
    warnings = [f.text for f in findings if f.level == "warning"]
    assert any("made for Dharma-AI/Dharma-OCR-LITE" in t for t in warnings)
    assert any("dharma is experimental" in t for t in warnings)
    missing = diagnose(BUILTIN["olmocr2"], "olmocr", {"other": 1}, NO_STOPS, {})
    assert missing[0].level == "problem" and "does not serve olmocr" in missing[0].text


def test_the_docs_table_matches_the_profiles() -> None:
    for profile in BUILTIN.values():
        row = next(
            (line for line in DOCS.splitlines() if line.startswith(f"| `{profile.id}` |")), ""
        )
        assert row, f"{profile.id} is missing from docs/models.md"
        assert f"| {profile.status} |" in row and f"| {profile.request.max_tokens} |" in row
        for flag in profile.serve_flags:
            assert f"`{flag}`" in row, (profile.id, flag)
