"""Model profiles without weights: pinned prompts, golden request bodies on three page shapes,
image sizes against each official rule, merged vllm_xargs, user profiles from folio.toml."""

from __future__ import annotations

import base64
import io
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from app.engines.registry import EngineSet
from app.engines.vlm import VlmEngine
from app.engines.vlm_image import model_image
from app.engines.vlm_stops import EndpointStops
from app.errors import ConfigError
from app.profiles import BUILTIN, profile_for_model
from app.profiles.request import merge_xargs
from app.settings import PlanStep, Settings, VlmEndpoint
from app.vllm_plugin.behaviours import DETECTOR_ARG, LOOP_STOP_ARG
from app.vllm_plugin.guard import GUARD_ARG
from tests.profile_pages import A4_LANDSCAPE, LETTER, SHAPES, pdf_page

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
GOLDEN = FIXTURES / "golden_bodies.json"
OFFICIAL = json.loads((FIXTURES / "official_prompts.json").read_text(encoding="utf-8"))
STEP = PlanStep(name="first", engine="vlm", endpoint="e")
PLUGIN = EndpointStops(plugin=True)


def test_every_official_prompt_is_the_published_string() -> None:
    import hashlib

    pinned = {
        "olmocr2": BUILTIN["olmocr2"].request.prompt,
        "dots-ocr-layout": BUILTIN["dots-ocr-layout"].request.prompt,
        "dots-ocr-text": BUILTIN["dots-ocr-text"].request.prompt,
        "chandra": BUILTIN["chandra"].request.prompt,
        "nanonets-ocr2": BUILTIN["nanonets-ocr2"].request.prompt,
        "granite-docling": BUILTIN["granite-docling"].request.prompt,
        "qwenvl-html": BUILTIN["qwenvl-html"].request.prompt,
        "qwenvl-html-system": BUILTIN["qwenvl-html"].request.system,
        # DeepSeek's config writes "<image>\n" before the text; the chat template puts it there
        "deepseek-ocr": "<image>\n" + (BUILTIN["deepseek-ocr"].request.prompt or ""),
        "deepseek-ocr-grounding": "<image>\n"
        + (BUILTIN["deepseek-ocr-grounding"].request.prompt or ""),
    }
    for key, text in pinned.items():
        source = OFFICIAL[key]
        assert text == source["text"], key
        assert hashlib.sha256(source["text"].encode()).hexdigest() == source["sha256"], key


def test_every_builtin_names_its_sources_and_status() -> None:
    assert {"olmocr2", "nanonets-ocr2", "dots-ocr-layout", "dots-ocr-text", "deepseek-ocr"} <= set(
        BUILTIN
    )
    for profile in BUILTIN.values():
        if profile.status != "generic":
            assert profile.sources or profile.status == "experimental", profile.id
        for source in profile.sources.values():
            assert source.repo.count("/") == 1 and source.path and source.commit, profile.id
    assert BUILTIN["dharma"].status == "experimental"
    assert BUILTIN["paddleocr-vl-page"].status == "approximation"
    assert BUILTIN["mineru25-page"].status == "approximation"


def described(body: dict[str, Any]) -> dict[str, Any]:
    """The body with each image data URL replaced by its size and format."""
    text = json.dumps(body)
    for message in body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                url = part["image_url"]["url"]
                head, data = url.split(",", 1)
                image = Image.open(io.BytesIO(base64.b64decode(data)))
                text = text.replace(
                    url, f"{head.split(';')[0]}:{image.width}x{image.height}:{image.format}"
                )
    return json.loads(text)


def golden_bodies() -> dict[str, Any]:
    bodies: dict[str, Any] = {}
    for profile in BUILTIN.values():
        engine = VlmEngine(
            "e", VlmEndpoint(base_url="http://127.0.0.1:9/v1", model="m"), profile=profile
        )
        try:
            for shape, page in SHAPES.items():
                stops = PLUGIN if shape == "letter" else EndpointStops()
                bodies[f"{profile.id}/{shape}"] = described(engine.request_body(page, STEP, stops))
        finally:
            engine.close()
    return bodies


def test_request_bodies_match_the_golden_ones() -> None:
    bodies = golden_bodies()
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert sorted(bodies) == sorted(golden)
    for key, body in bodies.items():
        assert body == golden[key], key


def test_request_shapes_follow_the_official_clients() -> None:
    bodies = golden_bodies()
    olmocr = bodies["olmocr2/letter"]
    assert [part["type"] for part in olmocr["messages"][0]["content"]] == ["text", "image_url"]
    assert olmocr["max_tokens"] == 8000 and olmocr["temperature"] == 0.1
    assert olmocr["vllm_xargs"] == {LOOP_STOP_ARG: 1}
    nanonets = bodies["nanonets-ocr2/scan"]["messages"]
    assert nanonets[0] == {"role": "system", "content": "You are a helpful assistant."}
    dots = bodies["dots-ocr-layout/scan"]["messages"][0]["content"]
    assert dots[1]["text"].startswith("<|img|><|imgpad|><|endofimg|>Please output the layout")
    lighton = bodies["lightonocr2/scan"]["messages"][0]["content"]
    assert [part["type"] for part in lighton] == ["image_url"]
    deepseek = bodies["deepseek-ocr/letter"]
    assert deepseek["skip_special_tokens"] is False
    assert deepseek["vllm_xargs"] == {
        "ngram_size": 30,
        "window_size": 90,
        "whitelist_token_ids": [128821, 128822],
        LOOP_STOP_ARG: 1,
    }
    assert bodies["granite-docling/scan"]["stop"] == ["</doctag>", "<|end_of_text|>"]
    for key, body in bodies.items():  # every sampling field explicit, never a server default
        assert {"temperature", "top_p", "repetition_penalty", "presence_penalty"} <= set(body), key


def test_plan_step_sampling_goes_over_the_profiles() -> None:
    engine = VlmEngine(
        "e", VlmEndpoint(base_url="http://x/v1", model="m"), profile=BUILTIN["chandra"]
    )
    try:
        step = PlanStep(name="retry", engine="vlm", endpoint="e", temperature=0.3, top_p=0.95)
        body = engine.request_body(SHAPES["scan"], step, EndpointStops())
    finally:
        engine.close()
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.3, 0.95, 12384)


def test_a_hosted_api_gets_only_the_openai_fields() -> None:
    endpoint = VlmEndpoint(base_url="http://x/v1", model="m", openai_fields_only=True)
    engine = VlmEngine("e", endpoint, profile=BUILTIN["mineru25-page"])
    try:
        body = engine.request_body(SHAPES["scan"], STEP, EndpointStops())
    finally:
        engine.close()
    assert "repetition_penalty" not in body and "top_k" not in body
    assert (body["temperature"], body["presence_penalty"]) == (0.0, 1.0)


def test_vllm_xargs_are_merged_and_a_clash_is_a_config_error() -> None:
    assert merge_xargs({"ngram_size": 30}, {GUARD_ARG: 20}) == {"ngram_size": 30, GUARD_ARG: 20}
    with pytest.raises(ConfigError, match="ngram_size"):
        merge_xargs({"ngram_size": 30}, {"ngram_size": 20})
    deepseek = BUILTIN["deepseek-ocr"]
    engine = VlmEngine("e", VlmEndpoint(base_url="http://x/v1", model="m"), profile=deepseek)
    try:
        step = PlanStep(name="g", engine="vlm", endpoint="e", ngram_guard=20)
        xargs = engine.request_body(SHAPES["scan"], step, PLUGIN)["vllm_xargs"]
    finally:
        engine.close()
    assert xargs["ngram_size"] == 30 and xargs[GUARD_ARG] == 20 and xargs[LOOP_STOP_ARG] == 1


def size_for(profile_id: str, points: tuple[float, float]) -> tuple[int, int]:
    return model_image(pdf_page(points), BUILTIN[profile_id].image).size


def near(found: tuple[int, int], expected: tuple[float, float]) -> bool:
    return all(abs(f - e) <= 1 for f, e in zip(found, expected, strict=True))


@pytest.mark.parametrize("points", [LETTER, A4_LANDSCAPE])
def test_image_sizes_follow_each_official_rule_within_a_pixel(points: tuple[float, float]) -> None:
    w, h = points
    # olmOCR: pdftoppm -r (1288 * 72 / longest side in points)
    dpi = 1288 * 72 / max(w, h)
    assert near(size_for("olmocr2", points), (w * dpi / 72, h * dpi / 72))
    # Nanonets (olmOCR's runner, after the cookbook): shortest side 1280
    scale = 1280 / min(w, h)
    assert near(size_for("nanonets-ocr2", points), (w * scale, h * scale))
    # dots.ocr: PyMuPDF at 200 DPI, no client resize; DeepSeek's PDF script: 144 DPI
    assert near(size_for("dots-ocr-layout", points), (w * 200 / 72, h * 200 / 72))
    assert near(size_for("deepseek-ocr", points), (w * 2, h * 2))
    # LightOnOCR-2: longest side 1540
    scale = 1540 / max(w, h)
    assert near(size_for("lightonocr2", points), (w * scale, h * scale))
    # Chandra: max(192 DPI, 1024 px short side), then within 3072x2048 pixels
    zoom = max(192, 1024 * 72 / min(w, h)) / 72
    cw, ch = w * zoom, h * zoom
    if cw * ch > 3072 * 2048:
        fit = math.sqrt(3072 * 2048 / (cw * ch))
        cw, ch = math.floor(cw * fit), math.floor(ch * fit)
    assert near(size_for("chandra", points), (cw, ch))


def test_a_page_is_rendered_again_only_when_the_render_at_hand_is_not_the_models_size() -> None:
    calls: list[float] = []
    page = pdf_page(LETTER)  # first rendered at 200 DPI, as the pipeline does
    assert page.render_at is not None
    render = page.render_at
    counted = replace(page, render_at=lambda dpi: calls.append(dpi) or render(dpi))
    assert model_image(counted, BUILTIN["dots-ocr-layout"].image).size == (1700, 2200)
    assert calls == []  # dots.ocr's 200 DPI is the render at hand
    model_image(counted, BUILTIN["olmocr2"].image)
    assert calls == [pytest.approx(1288 * 72 / 792)]


def test_dots_falls_back_to_72_dpi_for_huge_pages() -> None:
    assert size_for("dots-ocr-layout", (2000.0, 1000.0)) == (2000, 1000)  # 200 DPI: 5556 px


def test_grid_rules_land_on_the_grid_within_the_pixel_bounds() -> None:
    for profile_id in ("qwenvl-html", "paddleocr-vl-page"):
        rule = BUILTIN[profile_id].image
        for points in (LETTER, A4_LANDSCAPE):
            width, height = size_for(profile_id, points)
            assert width % 28 == 0 and height % 28 == 0, profile_id
            assert (rule.min_pixels or 0) <= width * height <= rule.value, profile_id
            assert abs(width / height - points[0] / points[1]) < 0.05, profile_id


def test_an_image_without_a_pdf_page_is_resized_by_the_rule() -> None:
    assert model_image(SHAPES["scan"], BUILTIN["olmocr2"].image).size == (966, 1288)
    assert model_image(SHAPES["scan"], BUILTIN["dots-ocr-layout"].image).size == (300, 400)
    assert model_image(SHAPES["scan"], BUILTIN["olmocr2"].image, max_side=200).size == (150, 200)


def test_a_model_finds_its_profile_by_name() -> None:
    assert profile_for_model("allenai/olmOCR-2-7B-1025-FP8").id == "olmocr2"
    assert profile_for_model("nanonets/Nanonets-OCR2-3B").id == "nanonets-ocr2"
    assert profile_for_model("Dharma-AI/Dharma-OCR-LITE").id == "dharma"
    assert profile_for_model("some/unknown-model").id == "markdown"


def test_default_deployment_uses_a_confirmed_profile() -> None:
    settings = Settings()
    profile = settings.profile_of("primary")
    assert profile.status == "official" and profile.id == "olmocr2"
    assert settings.vlm_endpoints["primary"].model == "allenai/olmOCR-2-7B-1025-FP8"


USER_PROFILE = """
engine = "vlm"

[vlm_endpoints.primary]
base_url = "http://127.0.0.1:8000/v1"
model = "acme/page-reader-1"
profile = "acme"

[profiles.acme]
id = "acme"
version = "1"
status = "community"
models = ["acme/page-reader-*"]

[profiles.acme.request]
system = "You read pages."
prompt = "Read this page."
order = "text_first"
max_tokens = 3000
sampling = {temperature = 0.0, top_p = 0.9}
vllm_xargs = {ngram_size = 12}

[profiles.acme.image]
rule = "shortest"
value = 1000

[profiles.acme.response]
format = "json_keys"
json_keys = ["title", "text"]
"""


def test_a_user_adds_a_profile_in_folio_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "folio.toml"
    config.write_text(USER_PROFILE)
    monkeypatch.setenv("FOLIO_CONFIG", str(config))
    settings = Settings()
    profile = settings.profile_of("primary")
    assert profile.id == "acme" and profile.request.max_tokens == 3000
    engine = VlmEngine("primary", settings.vlm_endpoints["primary"], profile=profile)
    try:
        body = engine.request_body(SHAPES["letter"], STEP, PLUGIN)
    finally:
        engine.close()
    assert body["messages"][0] == {"role": "system", "content": "You read pages."}
    assert body["messages"][1]["content"][0] == {"type": "text", "text": "Read this page."}
    assert body["vllm_xargs"] == {"ngram_size": 12, LOOP_STOP_ARG: 1}
    assert described(body)["messages"][1]["content"][1]["image_url"]["url"].endswith(
        ":1000x1294:PNG"
    )


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (
            '[vlm_endpoints.primary]\nbase_url = "http://x/v1"\nmodel = "m"\nprofile = "nope"\n',
            "unknown profile 'nope'",
        ),
        (USER_PROFILE.replace("{ngram_size = 12}", "{folio_loop_stop = 1}"), "belong to Folio"),
        (USER_PROFILE.replace('id = "acme"', 'id = "other"'), "must match"),
    ],
)
def test_bad_profiles_are_config_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, error: str
) -> None:
    config = tmp_path / "folio.toml"
    config.write_text(extra)
    monkeypatch.setenv("FOLIO_CONFIG", str(config))
    with pytest.raises(ValueError, match=error):
        Settings()


if __name__ == "__main__":  # regenerate after a deliberate change: python -m tests.test_profiles
    GOLDEN.write_text(json.dumps(golden_bodies(), indent=1, ensure_ascii=False) + "\n")


def test_the_plugin_gets_the_thresholds_the_clients_detector_runs_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The user's thresholds over the profile's reach the server's loop stop, not only the
    client's detector."""
    monkeypatch.setenv("FOLIO_DETECTOR", '{"fill_min_covered": 2048}')
    monkeypatch.setenv(
        "FOLIO_VLM_ENDPOINTS",
        json.dumps(
            {"primary": {"base_url": "http://vllm:8000/v1", "model": "nanonets/Nanonets-OCR2-3B"}}
        ),
    )
    settings = Settings()
    step = PlanStep(name="first", engine="vlm", endpoint="primary")
    engines = EngineSet(settings)
    engine = engines.for_step(step)
    try:
        assert isinstance(engine, VlmEngine)
        xargs = engine.request_body(SHAPES["letter"], step, PLUGIN)["vllm_xargs"]
        client = engine.detector_factory()
    finally:
        engines.close()
    sent = json.loads(xargs[DETECTOR_ARG])
    assert sent["fill_min_covered"] == 2048
    assert sent == {k: v for k, v in sent.items() if getattr(client.config, k) == v}
