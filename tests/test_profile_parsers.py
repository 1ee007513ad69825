"""Each answer parser on recorded real outputs (olmOCR's own) and on synthetic answers in the
formats with no recording (tests/fixtures/profiles/ORIGIN.md says which is which)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.profiles import BUILTIN
from app.profiles.answer import write_answer
from app.profiles.parsers import Unparseable, parse_answer
from app.profiles.parsers.otsl import otsl_to_html
from tests.conftest import SHARED

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
RECORDED = FIXTURES / "recorded"
SHARED_OLMOCR = SHARED / "corpus" / "olmocr_bench_sample"
OLMOCR = BUILTIN["olmocr2"].response


def test_olmocr_sample_answers_parse_into_body_and_fields() -> None:
    edgar = parse_answer(OLMOCR, (RECORDED / "olmocr_edgar.md").read_text())
    assert edgar.markdown.startswith("Edgar (or Eadgar;[1]") and "---" not in edgar.markdown
    assert edgar.fields == {
        "primary_language": "en",
        "is_rotation_valid": True,
        "rotation_correction": 0,
        "is_table": True,
        "is_diagram": False,
    }
    table = parse_answer(OLMOCR, (RECORDED / "olmocr_untable.md").read_text())
    assert table.markdown.startswith("Annex I:") and "<table>" in table.markdown
    blank = parse_answer(OLMOCR, (RECORDED / "olmocr_blanktext.md").read_text())
    assert blank.markdown == "" and blank.fields["is_table"] is False


def test_olmocr_recorded_pipeline_responses_carry_rotation_feedback() -> None:
    recorded = json.loads((RECORDED / "olmocr_test_pipeline_responses.json").read_text())
    parsed = [parse_answer(OLMOCR, answer) for answer in recorded["responses"]]
    rotations = [(p.fields["is_rotation_valid"], p.fields["rotation_correction"]) for p in parsed]
    assert rotations[:3] == [(False, 90), (True, 0), (False, 90)]
    assert {r for _, r in rotations} == {0, 90, 180, 270}
    assert "SECURITIES AND EXCHANGE COMMISSION" in parsed[1].markdown


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("Just text, no front matter", "no front matter"),
        ("---\nprimary_language: en\n", "never closed"),
        ("---\nprimary_language: en\nis_rotation_valid: true\n---\nx", "lacks"),
        (
            "---\nprimary_language: en\nis_rotation_valid: true\nrotation_correction: 45\n"
            "is_table: false\nis_diagram: false\n---\nx",
            "rotation_correction",
        ),
        (
            "---\nprimary_language: en\nis_rotation_valid: true\nrotation_correction: 0\n"
            "is_table: false\nis_diagram: false\nmood: happy\n---\nx",
            "unexpected",
        ),
    ],
)
def test_olmocr_answers_out_of_format_are_unparseable(answer: str, why: str) -> None:
    with pytest.raises(Unparseable, match=why):
        parse_answer(OLMOCR, answer)


def test_olmocr_norwegian_no_is_no_language() -> None:
    answer = (
        "---\nprimary_language: no\nis_rotation_valid: True\nrotation_correction: 0\n"
        "is_table: False\nis_diagram: False\n---\nHei"
    )
    assert parse_answer(OLMOCR, answer).fields["primary_language"] is None


def test_olmocr_committed_bench_outputs_round_trip_through_the_trained_format() -> None:
    """olmOCR's committed page outputs (../shared, read in place), written as the model answers
    and read back: the page text comes back unchanged."""
    folder = SHARED_OLMOCR / "olmocr_pipeline"
    if not folder.is_dir():
        pytest.skip("../shared/corpus/olmocr_bench_sample is absent")
    pages = sorted(folder.glob("*.md"))
    assert len(pages) >= 10
    for page in pages:
        text = page.read_text(encoding="utf-8").strip()
        answer = write_answer(BUILTIN["olmocr2"], text, {"is_table": "<table" in text})
        assert answer is not None and answer.startswith("---\nprimary_language: en\n")
        assert parse_answer(OLMOCR, answer).markdown == text, page.name


SYNTHETIC = json.loads((FIXTURES / "synthetic_answers.json").read_text())


@pytest.mark.parametrize(
    "profile_id", ["dots-ocr-layout", "deepseek-ocr-grounding", "chandra", "granite-docling"]
)
def test_synthetic_answers_read_as_the_official_post_processing_does(profile_id: str) -> None:
    case = SYNTHETIC[profile_id]
    assert parse_answer(BUILTIN[profile_id].response, case["answer"]).markdown == case["expected"]


def test_qwen_html_keeps_tables_as_html() -> None:
    case = SYNTHETIC["qwenvl-html"]
    assert (
        parse_answer(BUILTIN["qwenvl-html"].response, case["answer"]).markdown == case["expected"]
    )


def test_furniture_is_kept_when_asked() -> None:
    rule = BUILTIN["dots-ocr-layout"].response.model_copy(update={"drop_furniture": False})
    markdown = parse_answer(rule, SYNTHETIC["dots-ocr-layout"]["answer"]).markdown
    assert markdown.startswith("Journal of Examples") and markdown.endswith("3")


@pytest.mark.parametrize(
    ("profile_id", "answer"),
    [
        ("dots-ocr-layout", '[{"bbox": [1, 2, 3, 4], "category": "Text", "text": "cut off'),
        ("dots-ocr-layout", '{"text": "no category"}'),
        ("chandra", "plain text with no blocks"),
        ("granite-docling", "Results without any tags"),
        ("dharma", '{"header": "", "text": "x"}'),
    ],
)
def test_answers_that_break_their_format_are_unparseable(profile_id: str, answer: str) -> None:
    with pytest.raises(Unparseable):
        parse_answer(BUILTIN[profile_id].response, answer)


def test_dharma_json_keeps_only_the_body_unless_furniture_is_wanted() -> None:
    answer = '{"header": "H", "text": "Body", "margin": "M", "footer": "F"}'
    rule = BUILTIN["dharma"].response
    assert parse_answer(rule, answer).markdown == "Body"
    kept = rule.model_copy(update={"drop_furniture": False})
    assert parse_answer(kept, answer).markdown == "H\n\nBody\n\nM\n\nF"


def test_otsl_spans_become_colspan_and_rowspan() -> None:
    html = otsl_to_html("<fcel>A<lcel><fcel>B<nl><ucel><ucel><fcel>C<nl>")
    assert html == (
        '<table><tr><td colspan="2" rowspan="2">A</td><td>B</td></tr><tr><td>C</td></tr></table>'
    )


def test_answers_written_back_in_the_models_format_parse_to_the_same_page() -> None:
    for profile_id in ("olmocr2", "dharma", "markdown", "nanonets-ocr2"):
        profile = BUILTIN[profile_id]
        answer = write_answer(profile, "Page text\n\nmore", {})
        assert answer is not None
        assert parse_answer(profile.response, answer).markdown == "Page text\n\nmore"
    layout = parse_answer(
        BUILTIN["dots-ocr-layout"].response, SYNTHETIC["dots-ocr-layout"]["answer"]
    )
    assert (
        write_answer(BUILTIN["dots-ocr-layout"], layout.markdown, layout.fields)
        == (SYNTHETIC["dots-ocr-layout"]["answer"])
    )
    assert write_answer(BUILTIN["chandra"], "text", {}) is None
