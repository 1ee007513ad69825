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


def test_state_goes_to_the_per_user_data_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("FOLIO_DATA_DIR")  # as a user has it: nothing set
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    home_data = tmp_path / "home" / ".local" / "share" / "folio"
    settings = Settings()
    assert settings.data_dir == home_data
    assert settings.database_url == f"sqlite:///{home_data / 'folio.db'}"
    assert settings.upload_dir == home_data / "uploads"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert Settings().data_dir == tmp_path / "xdg" / "folio"
    monkeypatch.setenv("FOLIO_DATA_DIR", "~/state")
    assert Settings().database_url == f"sqlite:///{tmp_path / 'home' / 'state' / 'folio.db'}"
    monkeypatch.setenv("FOLIO_DATABASE_URL", "postgresql+psycopg://db/folio")
    assert Settings().database_url == "postgresql+psycopg://db/folio"


def test_tests_never_write_to_the_real_data_folder(tmp_path: Path) -> None:
    """The autouse fixture in conftest.py points data_dir at the test's own tmp_path."""
    assert Settings().data_dir == tmp_path / "folio-data"
    assert Path.home() not in Settings().data_dir.parents
