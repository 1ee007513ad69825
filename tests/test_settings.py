from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from app.settings import Settings


def test_zero_configuration_defaults_to_the_embedded_plan() -> None:
    settings = Settings()
    assert settings.engine == "auto"
    assert settings.database_url.startswith("sqlite")
    assert [s.engine for s in settings.plan()] == ["textlayer", "tesseract"]


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOLIO_DPI", "150")
    monkeypatch.setenv("FOLIO_ENGINE", "tesseract")
    settings = Settings()
    assert (settings.dpi, settings.engine) == (150, "tesseract")


def test_toml_file_is_read_and_unknown_keys_rejected(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "folio.toml"
    config.write_text('dpi = 120\n[vlm_endpoints.primary]\nbase_url = "http://x/v1"\nmodel = "m"\n')
    monkeypatch.setenv("FOLIO_CONFIG", str(config))
    settings = Settings()
    assert settings.dpi == 120 and settings.vlm_endpoints["primary"].model == "m"
    config.write_text("dpii = 120\n")
    with pytest.raises(ValidationError, match="dpii"):
        Settings()


def test_unknown_default_plan_is_rejected() -> None:
    with pytest.raises(ValidationError, match="not a plan"):
        Settings(engine="nope")


def test_detector_overrides_are_checked() -> None:
    assert Settings(detector={"min_repeats": 4}).detector == {"min_repeats": 4}
    with pytest.raises(ValidationError, match="min_reps"):
        Settings(detector={"min_reps": 4})


def test_vlm_step_needs_an_endpoint() -> None:
    with pytest.raises(ValidationError, match="needs an endpoint"):
        Settings(plans={"x": [{"name": "a", "engine": "vlm"}]})
