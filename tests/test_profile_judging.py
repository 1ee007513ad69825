"""Judging an answer that did not loop, as a table: (profile, finish reason, text) -> valid,
or invalid with its reason."""

from __future__ import annotations

import pytest

from app.profiles import BUILTIN
from app.profiles.judge import (
    MISSING_END_TEXT,
    ROTATED,
    TRUNCATED,
    UNPARSEABLE,
    judge_answer,
    rotation_after,
)
from app.profiles.prompts import DEEPSEEK_EOS

YAML_OK = (
    "---\nprimary_language: en\nis_rotation_valid: True\nrotation_correction: 0\n"
    "is_table: False\nis_diagram: False\n---\nHello"
)

CASES = [
    # (profile, finish_reason, answer, invalid reason or None for valid)
    ("olmocr2", "stop", YAML_OK, None),
    ("olmocr2", "length", YAML_OK, TRUNCATED),  # olmOCR refuses finish_reason != "stop"
    ("olmocr2", "stop", "Hello, no front matter", UNPARSEABLE),
    ("olmocr2", "stop", YAML_OK.replace("is_diagram: False\n", ""), UNPARSEABLE),
    ("olmocr2", None, YAML_OK, None),  # a server that does not say why it ended
    # the model says the page is turned: asked again, turned (olmOCR's rotation feedback)
    (
        "olmocr2",
        "stop",
        YAML_OK.replace("is_rotation_valid: True", "is_rotation_valid: False"),
        ROTATED,
    ),
    ("markdown", "length", "A page cut off mid-sen", TRUNCATED),
    ("markdown", "stop", "A whole page.", None),
    ("deepseek-ocr", "stop", "Text" + DEEPSEEK_EOS, None),
    ("deepseek-ocr", "stop", "Text without its end", MISSING_END_TEXT),
    ("dots-ocr-layout", "stop", '[{"bbox": [1, 2, 3, 4], "category": "Text", "text": "a"}]', None),
    ("dots-ocr-layout", "stop", '[{"bbox": [1, 2, 3, 4], "category": "Te', UNPARSEABLE),
    ("dharma", "stop", '{"header": "", "text": "a", "margin": "", "footer": ""}', None),
    ("dharma", "stop", "plain text", UNPARSEABLE),
    ("granite-docling", "stop", "<doctag><text>a</text></doctag>", None),
]


@pytest.mark.parametrize(("profile_id", "finish", "answer", "expected"), CASES)
def test_judging_table(profile_id: str, finish: str | None, answer: str, expected: str) -> None:
    judgement = judge_answer(BUILTIN[profile_id].response, finish, answer)
    assert judgement.invalid == expected
    assert (judgement.parsed is not None) == (expected in (None, ROTATED))
    if expected:
        assert judgement.detail


def test_a_valid_answer_comes_back_as_markdown_with_its_fields() -> None:
    judgement = judge_answer(BUILTIN["olmocr2"].response, "stop", YAML_OK)
    assert judgement.parsed is not None and judgement.parsed.markdown == "Hello"
    assert judgement.parsed.fields["primary_language"] == "en"
    eos = judge_answer(BUILTIN["deepseek-ocr"].response, "stop", "Text" + DEEPSEEK_EOS)
    assert eos.parsed is not None and eos.parsed.markdown == "Text"


@pytest.mark.parametrize(
    ("turn", "correction", "expected"),
    # olmOCR's tests/test_pipeline.py: 0 -> 90 -> 180, and past 360 it wraps around
    [(0, 90, 90), (90, 90, 180), (270, 180, 90), (180, 0, 180)],
)
def test_rotation_accumulates_as_olmocr_does(turn: int, correction: int, expected: int) -> None:
    assert rotation_after(turn, {"rotation_correction": correction}) == expected
