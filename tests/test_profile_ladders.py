"""The built-in `vlm` plan follows the primary endpoint's profile: each model's own retry
ladder (../shared/notes/ocr-models.md, section 2, item 4 of each model), as a table."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from app.profiles import BUILTIN
from app.settings import Settings

TAIL = ["fallback-model", "textlayer", "tesseract"]


def own_temperature_plus(profile: str, step: float) -> float:
    return round((BUILTIN[profile].request.sampling.temperature or 0.0) + step, 2)


# profile -> the primary's rungs of the built-in `vlm` plan: (name, temperature, top_p) as the
# plan step sets them (None: the profile's own sampling is sent)
LADDERS: dict[str, list[tuple[str, float | None, float | None]]] = {
    # olmocr/pipeline.py:84-85, three of its eight temperatures
    "olmocr2": [("t0.1", 0.1, None), ("t0.2", 0.2, None), ("t0.5", 0.5, None)],
    # chandra/model/vllm.py:54-134: near-greedy, then T 0.3 / top_p 0.95 on a repeat
    "chandra": [("first", 0.0, 0.1), ("retry", 0.3, 0.95)],
    # no retry in their own pipelines: one attempt at the profile's sampling, then Folio's one
    # retry under altered decoding, 0.2 above the profile's own temperature
    **{
        name: [("first", None, None), ("retry", own_temperature_plus(name, 0.2), None)]
        for name in (
            "nanonets-ocr2",
            "dots-ocr-layout",
            "dots-ocr-text",
            "deepseek-ocr",
            "deepseek-ocr-grounding",
            "lightonocr2",
            "granite-docling",
            "qwenvl-html",
            "markdown",
            "dharma",
            "paddleocr-vl-page",
            "mineru25-page",
        )
    },
}


def test_the_table_names_every_builtin_profile() -> None:
    assert set(LADDERS) == set(BUILTIN)


@pytest.mark.parametrize("profile", sorted(LADDERS))
def test_the_vlm_plan_runs_the_primary_profiles_own_ladder(profile: str) -> None:
    primary = {"base_url": "http://127.0.0.1:8000/v1", "model": "served", "profile": profile}
    plan = Settings(vlm_endpoints={"primary": primary}).plan("vlm")

    rungs = [(s.name, s.temperature, s.top_p) for s in plan if s.endpoint == "primary"]
    assert rungs == LADDERS[profile]
    assert [s.name for s in plan[len(rungs) :]] == TAIL


def test_the_profile_is_found_by_the_served_models_name_too() -> None:
    primary = {"base_url": "http://127.0.0.1:8000/v1", "model": "datalab-to/chandra"}
    plan = Settings(vlm_endpoints={"primary": primary}).plan("vlm")
    assert [s.name for s in plan] == ["first", "retry", *TAIL]


def test_the_default_deployment_runs_olmocr2s_temperatures() -> None:
    plan = Settings().plan("vllm")  # the alias
    assert [s.temperature for s in plan if s.endpoint == "primary"] == [0.1, 0.2, 0.5]


def test_a_users_profile_brings_its_own_ladder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "folio.toml"
    config.write_text(
        '[vlm_endpoints.primary]\nbase_url = "http://x/v1"\nmodel = "acme/reader"\n'
        'profile = "acme"\n\n[profiles.acme]\nid = "acme"\nversion = "1"\n'
        'status = "community"\nplan_rungs = [2, 0]\n'
        'ladder = [{name = "cold", temperature = 0.0}, {name = "warm", temperature = 0.4},'
        ' {name = "hot", temperature = 0.9, top_p = 0.8}]\n'
        '[profiles.acme.request]\nprompt = "Read."\nmax_tokens = 100\n'
        '[profiles.acme.image]\nrule = "longest"\nvalue = 1000\n'
        '[profiles.acme.response]\nformat = "markdown"\n'
    )
    monkeypatch.setenv("FOLIO_CONFIG", str(config))
    plan = Settings().plan("vlm")
    assert [(s.name, s.temperature, s.top_p) for s in plan[:2]] == [
        ("hot", 0.9, 0.8),
        ("cold", 0.0, None),
    ]


def test_a_plan_rung_outside_the_ladder_is_refused() -> None:
    with pytest.raises(ValueError, match=r"plan_rungs \[3\]: the ladder has 2 rungs"):
        BUILTIN["chandra"].model_validate({**BUILTIN["chandra"].model_dump(), "plan_rungs": [3]})


def test_plans_the_user_sets_are_kept_whatever_the_profile() -> None:
    primary = {"base_url": "http://x/v1", "model": "m", "profile": "chandra"}
    mine = {"vlm": [{"name": "only", "engine": "tesseract"}]}
    settings = Settings(vlm_endpoints={"primary": primary}, plans=mine, engine="vlm")
    assert [s.name for s in settings.plan()] == ["only"]


def test_folio_models_shows_each_profiles_vlm_plan() -> None:
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    shown = {  # each profile's heading line, then its indented lines
        line.split()[0]: next(b for b in lines[i + 1 : i + 4] if "vlm plan:" in b)
        for i, line in enumerate(lines)
        if line and not line.startswith(" ")
    }
    assert set(shown) == set(LADDERS)
    assert (
        "vlm plan: t0.1 (T 0.1, top_p 1.0), t0.2 (T 0.2, top_p 1.0), t0.5 (T 0.5"
        in (shown["olmocr2"])
    )
    assert "vlm plan: first (T 0.0, top_p 0.1), retry (T 0.3, top_p 0.95);" in shown["chandra"]
    # a profile without a ladder: one attempt, at the sampling its own request sends
    assert "vlm plan: first (T 0.2, top_p 0.9), retry (T 0.4, top_p 0.9);" in shown["lightonocr2"]
    detail = CliRunner().invoke(app, ["models", "mineru25-page"]).output
    assert "vlm plan: first (T 0.0, top_p 0.01), retry (T 0.2, top_p 0.01); then the fallback" in (
        detail
    )
