"""Profiles replayed end to end through the real vLLM CPU server: the scripted-decoding
processor writes a model's answer token by token, Folio's engine asks with the profile's
request (accepted by vLLM), streams it, judges it and reads it to Markdown; a loop in the
format is stopped; an invalid answer is retried and counted on a real job."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, ClassVar

import pytest
from PIL import Image
from sqlalchemy import select
from typer.testing import CliRunner

from app.api.schemas import PageDetail
from app.cli.main import app
from app.db.engine import Database
from app.db.models import Attempt, Page
from app.domain import AttemptStatus, PageInput
from app.engines.registry import EngineSet
from app.engines.vlm_doctor import check_endpoint
from app.engines.vlm_stops import EndpointStops
from app.errors import EngineError
from app.jobs import JobRequest, create_job, run_job_locally
from app.jobs.results import load_results
from app.pdf import samples
from app.pdf.samples import PARAGRAPHS
from app.profiles import BUILTIN, Profile
from app.profiles.prompts import DEEPSEEK_EOS
from app.report.build import build_report
from app.settings import PlanStep, Settings, VlmEndpoint
from bench.scripted import ScriptedPage, ScriptedVlmEngine, with_script
from tests.vllm_cpu.server import VllmEndpoint

pytestmark = pytest.mark.vllm

FIXTURES = Path(__file__).parents[1] / "fixtures" / "profiles"
SYNTHETIC = json.loads((FIXTURES / "synthetic_answers.json").read_text(encoding="utf-8"))
EDGAR = (FIXTURES / "recorded" / "olmocr_test_pipeline_responses.json").read_text()
CAP = 600
STEP = PlanStep(name="first", engine="vlm", endpoint="primary", max_tokens=CAP)
YAML_HEAD = (
    "---\nprimary_language: en\nis_rotation_valid: True\nrotation_correction: 0\n"
    "is_table: False\nis_diagram: False\n---\n"
)


def endpoint_at(server: VllmEndpoint) -> VlmEndpoint:
    # A small image: the tiny server's context is 2048 tokens.
    return VlmEndpoint(base_url=server.base_url, model=server.model, max_image_side=256)


def replay(server: VllmEndpoint, profile: Profile, answer: str, step: PlanStep = STEP) -> Any:
    engine = ScriptedVlmEngine("primary", endpoint_at(server), profile=profile)
    page = ScriptedPage(
        raster=Image.new("RGB", (200, 280), "white"),
        text_layer="",
        text_layer_usable=False,
        healthy_text=answer,
    )
    try:
        return engine.transcribe(page, step)
    finally:
        engine.close()


REPLAYS = [
    ("olmocr2", json.loads(EDGAR)["responses"][1], None),
    ("dots-ocr-layout", SYNTHETIC["dots-ocr-layout"]["answer"], "dots-ocr-layout"),
    ("chandra", SYNTHETIC["chandra"]["answer"], "chandra"),
    ("granite-docling", SYNTHETIC["granite-docling"]["answer"], "granite-docling"),
    ("qwenvl-html", SYNTHETIC["qwenvl-html"]["answer"], "qwenvl-html"),
    ("nanonets-ocr2", "Total: 14 <page_number>3</page_number>", None),
    ("lightonocr2", "# Title\n\nBody text.", None),
    ("mineru25-page", "Plain block text.", None),
]
# The tiny model's own EOS stands in for DeepSeek's (its tokenizer has no such token): with
# skip_special_tokens false and include_stop_str_in_output, vLLM writes it at the end.
TINY_EOS = "<|im_end|>"


def tiny_deepseek(profile_id: str) -> Profile:
    profile = BUILTIN[profile_id]
    response = profile.response.model_copy(update={"require_end_text": TINY_EOS})
    return profile.model_copy(update={"response": response})


@pytest.mark.parametrize(("profile_id", "answer", "synthetic"), REPLAYS)
def test_each_profile_is_accepted_streamed_judged_and_read(
    vllm_endpoint: VllmEndpoint, profile_id: str, answer: str, synthetic: str | None
) -> None:
    result = replay(vllm_endpoint, BUILTIN[profile_id], answer)
    assert result.status is AttemptStatus.OK, (result.invalid_reason, result.error, result.text)
    assert result.finish_reason == "stop" and result.prompt_version == BUILTIN[profile_id].tag
    expected = SYNTHETIC[synthetic]["expected"] if synthetic else None
    if expected is not None:
        assert result.text == expected
    elif profile_id == "olmocr2":
        assert result.text.startswith("UNITED STATES") and "---" not in result.text
        assert result.answer_fields["rotation_correction"] == 0
    else:
        assert result.text == answer


def test_invalid_answers_are_judged_with_their_reason(vllm_endpoint: VllmEndpoint) -> None:
    olmocr = BUILTIN["olmocr2"]
    unparseable = replay(vllm_endpoint, olmocr, "A page without its front matter.")
    assert unparseable.status is AttemptStatus.INVALID
    assert unparseable.invalid_reason == "unparseable"
    assert unparseable.text == "A page without its front matter."
    short = PlanStep(name="first", engine="vlm", endpoint="primary", max_tokens=20)
    cut = replay(vllm_endpoint, olmocr, YAML_HEAD + " ".join(PARAGRAPHS[:2]), short)
    assert cut.status is AttemptStatus.INVALID and cut.invalid_reason == "truncated"
    assert cut.finish_reason == "length"


def test_deepseek_sees_its_end_of_sentence_and_reads_its_grounding(
    vllm_endpoint: VllmEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    answer = SYNTHETIC["deepseek-ocr-grounding"]["answer"].replace(DEEPSEEK_EOS, "")
    with caplog.at_level(logging.WARNING, logger="app.engines.vlm_doctor"):
        result = replay(vllm_endpoint, tiny_deepseek("deepseek-ocr-grounding"), answer)
    assert result.status is AttemptStatus.OK, (result.invalid_reason, result.text)
    assert result.text == SYNTHETIC["deepseek-ocr-grounding"]["expected"]
    # the CPU server runs no n-gram processor: said once, at the engine's first request
    assert "does not run the ngram_processor" in caplog.text
    # the real model's answer with its EOS missing (the official script drops such pages)
    cut = replay(vllm_endpoint, BUILTIN["deepseek-ocr"], "Text")
    assert cut.status is AttemptStatus.INVALID and cut.invalid_reason == "missing end text"


def test_paddle_page_mode_needs_its_server_flag(vllm_endpoint: VllmEndpoint) -> None:
    profile = BUILTIN["paddleocr-vl-page"]
    with pytest.raises(EngineError, match="trust-request-mm-kwargs"):
        replay(vllm_endpoint, profile, "Plain block text.")
    assert "--trust-request-mm-kwargs" in profile.serve_flags


def test_a_loop_in_the_models_format_is_stopped(vllm_endpoint: VllmEndpoint) -> None:
    block = " ".join(PARAGRAPHS[:2])
    olmocr_loop = YAML_HEAD + "Page 1\n\n" + (block + "\n\n") * 40
    result = replay(vllm_endpoint, BUILTIN["olmocr2"], olmocr_loop)
    assert result.status is AttemptStatus.DEGENERATE and result.aborted
    assert (result.completion_tokens or CAP) < CAP
    cell = {"bbox": [10, 10, 900, 60], "category": "Text", "text": block}
    dots_loop = json.dumps([cell] * 40)
    looped = replay(vllm_endpoint, BUILTIN["dots-ocr-layout"], dots_loop)
    assert looped.status is AttemptStatus.DEGENERATE


class StepScripted(ScriptedVlmEngine):
    """The real engine, asking the scripted server for each plan step's own answer."""

    scripts: ClassVar[dict[str, str]] = {}

    def request_body(
        self, page: PageInput, step: PlanStep, stops: EndpointStops | None = None
    ) -> dict[str, Any]:
        return with_script(super().request_body(page, step, stops), self.scripts[step.name])


class ScriptedEngines(EngineSet):
    def _build_vlm(self, step: PlanStep) -> StepScripted:
        endpoint = self.settings.vlm_endpoints["primary"]
        return StepScripted("primary", endpoint, profile=self.settings.profile_of("primary"))


def test_an_invalid_answer_is_retried_and_counted_in_the_report(
    vllm_endpoint: VllmEndpoint, sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "scan.pdf").write_bytes(samples.scanned_pdf([samples.page_text(1)]))
    steps = [
        PlanStep(name="bare", engine="vlm", endpoint="primary", max_tokens=CAP),
        PlanStep(name="turned", engine="vlm", endpoint="primary", max_tokens=CAP),
        PlanStep(name="cut", engine="vlm", endpoint="primary", max_tokens=20),
        PlanStep(name="whole", engine="vlm", endpoint="primary", max_tokens=CAP),
    ]
    StepScripted.scripts = {
        "bare": "No front matter here.",
        "turned": YAML_HEAD.replace(
            "is_rotation_valid: True\nrotation_correction: 0",
            "is_rotation_valid: False\nrotation_correction: 90",
        )
        + "Sideways.",
        "cut": YAML_HEAD + " ".join(PARAGRAPHS[:2]),
        "whole": YAML_HEAD + "The page, read whole.",
    }
    settings = Settings(
        database_url=sqlite_url,
        engine="ladder",
        plans={"ladder": steps},
        vlm_endpoints={
            "primary": endpoint_at(vllm_endpoint).model_copy(update={"profile": "olmocr2"})
        },
        vlm_concurrency=1,
    )
    monkeypatch.setattr("app.jobs.EngineSet", ScriptedEngines, raising=False)
    db = Database(sqlite_url)
    ingested = create_job(settings, db, JobRequest(tmp_path, None, "ladder"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    with db.session() as session:
        page = session.scalars(select(Page)).one()
        attempts = session.scalars(select(Attempt).order_by(Attempt.id)).all()
        assert [(a.status, a.invalid_reason) for a in attempts] == [
            ("invalid", "unparseable"),
            ("invalid", "rotated"),
            ("invalid", "truncated"),
            ("ok", None),
        ]
        # after the model's feedback the page is sent turned by 90 degrees
        assert [a.params.get("rotation") for a in attempts] == [None, None, 90, 90]
        assert attempts[3].answer_fields and attempts[3].answer_fields["is_table"] is False
        assert page.status == "fallback" and page.final_step == "whole"
    (result,) = load_results(db, ingested.job_id).documents
    assert result.pages[0].text == "The page, read whole."
    assert result.pages[0].fields and result.pages[0].fields["primary_language"] == "en"
    report = build_report(db, settings, ingested.job_id).report
    assert report.by_outcome["invalid"].attempts == 3 and report.invalid_attempts == 3


def test_the_models_boxes_reach_the_results_json(
    vllm_endpoint: VllmEndpoint, sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dots.ocr's layout cells, written by the scripted server, come back as positions in
    PDF points and in pixels of the image sent, on the attempt and in the results JSON."""
    (tmp_path / "scan.pdf").write_bytes(samples.scanned_pdf([samples.page_text(1)]))
    # the image sent is the Letter page fitted to 256 px: 198 x 256, which the server's
    # smart_resize makes 196 x 252 (dots.ocr's boxes count in those pixels)
    cells = [
        {"bbox": [0, 0, 196, 252], "category": "Text", "text": "All over"},
        {"bbox": [0, 0, 98, 63], "category": "Title", "text": "# Top left"},
    ]
    StepScripted.scripts = {"layout": json.dumps(cells)}
    settings = Settings(
        database_url=sqlite_url,
        engine="layout",
        plans={
            "layout": [PlanStep(name="layout", engine="vlm", endpoint="primary", max_tokens=CAP)]
        },
        vlm_endpoints={
            "primary": endpoint_at(vllm_endpoint).model_copy(update={"profile": "dots-ocr-layout"})
        },
        vlm_concurrency=1,
    )
    monkeypatch.setattr("app.jobs.EngineSet", ScriptedEngines, raising=False)
    db = Database(sqlite_url)
    ingested = create_job(settings, db, JobRequest(tmp_path, None, "layout"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    with db.session() as session:
        attempt = session.scalars(select(Attempt)).one()
        assert attempt.status == "ok" and attempt.positions is not None
        # the API's page detail (GET /v1/jobs/{id}/pages/{page_id}) gives the same
        detail = PageDetail.detail_of(session.scalars(select(Page)).one())
        assert detail.positions == attempt.positions
    (result,) = load_results(db, ingested.job_id).documents
    page = result.pages[0]
    assert page.text == "All over\n\n# Top left" and page.positions == attempt.positions
    positions = page.positions
    assert positions["source"] == "vlm" and positions["profile"].startswith("dots-ocr-layout@")
    assert positions["page"] == {
        "width_pt": 612.0,
        "height_pt": 792.0,
        "width_px": 198,
        "height_px": 256,
    }
    whole, corner = positions["blocks"]
    assert (whole["category"], whole["text"]) == ("Text", "All over")
    assert (corner["category"], corner["text"]) == ("Title", "# Top left")
    pt_per_px = 612 / 198
    assert whole["box_px"] == pytest.approx([0, 0, 198, 256], abs=1)
    assert whole["box_pt"] == pytest.approx([0, 0, 612, 792], abs=pt_per_px)
    assert corner["box_px"] == pytest.approx([0, 0, 99, 64], abs=1)
    assert corner["box_pt"] == pytest.approx([0, 0, 306, 198], abs=pt_per_px)


def test_doctor_command_names_the_problem_in_plain_words(vllm_endpoint: VllmEndpoint) -> None:
    result = CliRunner().invoke(app, ["doctor", vllm_endpoint.base_url])
    assert result.exit_code == 5, result.output
    assert f"{vllm_endpoint.model} with profile markdown@" in result.output
    assert "max_model_len is 2048: too short for 4096 completion tokens" in " ".join(
        result.output.split()
    )


def test_doctor_reads_the_cpu_server(vllm_endpoint: VllmEndpoint) -> None:
    settings = Settings(vlm_endpoints={"primary": endpoint_at(vllm_endpoint)})
    checkup = check_endpoint(settings, "primary", None, None)
    texts = [f.text for f in checkup.findings]
    assert f"the server serves {vllm_endpoint.model}" in texts
    # the tiny server's 2048-token context cannot hold the generic profile's 4096 tokens
    assert any(f.level == "problem" and "max_model_len is 2048" in f.text for f in checkup.findings)
    other = check_endpoint(settings, vllm_endpoint.base_url, "not-served", "deepseek-ocr")
    found = {f.level: f.text for f in other.findings}
    assert "does not serve not-served" in found["problem"] or any(
        "does not serve not-served" in f.text for f in other.findings
    )
    assert any("NGramPerReqLogitsProcessor" in f.text for f in other.findings)
