"""Folio's one settings object: environment (`FOLIO_` prefix) over `folio.toml` over defaults.

`Settings` is one flat object (the environment names are its field names); its fields are
declared by concern in this package's modules and gathered here in the order the reference
lists them: state, plans, OCR, limits, storage, service, runtime, webhooks."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from app.profiles.model import Profile
from app.settings.endpoints import DEFAULT_PROFILE, VlmEndpoint, metrics_url_of
from app.settings.limits import LimitFields
from app.settings.ocr import OcrFields
from app.settings.plans import EngineKind, PlanFields, PlanStep, builtin_vlm_plan
from app.settings.runtime import RuntimeFields
from app.settings.service import ServiceFields
from app.settings.state import StateFields, user_data_dir
from app.settings.storage import StorageFields
from app.settings.webhooks import WebhookFields, WebhookSettings

__all__ = [
    "DEFAULT_PROFILE",
    "EngineKind",
    "PlanStep",
    "Settings",
    "VlmEndpoint",
    "WebhookSettings",
    "builtin_vlm_plan",
    "get_settings",
    "metrics_url_of",
    "user_data_dir",
]


# Pydantic lists inherited fields from the last base to the first: the sections in reverse
# keep the fields in the order of the reference (and of the defaults that read earlier fields).
class Settings(
    WebhookFields,
    RuntimeFields,
    ServiceFields,
    StorageFields,
    LimitFields,
    OcrFields,
    PlanFields,
    StateFields,
    BaseSettings,
):
    """Every knob Folio reads. Nested fields take `__` in environment names."""

    model_config = SettingsConfigDict(
        env_prefix="FOLIO_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    @field_validator("data_dir", "upload_dir", "storage_cache_dir")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @model_validator(mode="after")
    def _plans_are_consistent(self) -> Settings:
        if self.plan_name() not in self.plans:
            raise ValueError(f"engine {self.engine!r} is not a plan; known: {sorted(self.plans)}")
        from app.degeneration import DetectorConfig

        try:
            DetectorConfig(**self.detector)
        except TypeError as exc:
            raise ValueError(f"detector: {exc}") from exc
        for name, steps in self.plans.items():
            if not steps:
                raise ValueError(f"plan {name!r} has no steps")
        self._check_profiles()
        return self

    def _check_profiles(self) -> None:
        from app.errors import ConfigError
        from app.profiles.registry import check_profiles
        from app.vllm_plugin.behaviours import LOOP_STOP_ARG
        from app.vllm_plugin.guard import GUARD_ARG, WINDOW_ARG

        named = {name: (e.profile, e.model) for name, e in self.vlm_endpoints.items()}
        try:
            check_profiles(self.profiles, named, {LOOP_STOP_ARG, GUARD_ARG, WINDOW_ARG})
        except ConfigError as exc:
            raise ValueError(str(exc)) from exc

    def profile_of(self, endpoint_name: str) -> Profile:
        """The model profile a configured endpoint uses."""
        from app.profiles import resolve_profile

        endpoint = self.vlm_endpoints[endpoint_name]
        return resolve_profile(endpoint.profile, endpoint.model, self.profiles)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = Path(os.environ.get("FOLIO_CONFIG", "folio.toml"))
        toml = TomlConfigSettingsSource(settings_cls, toml_file=toml_path)
        return (init_settings, env_settings, toml)

    def plan(self, name: str | None = None) -> list[PlanStep]:
        """The attempt plan called `name` (the configured default when None)."""
        key = self.plan_name(name)
        if key not in self.plans:
            raise KeyError(f"unknown plan {key!r}; known: {', '.join(sorted(self.plans))}")
        return self.plans[key]

    def plan_name(self, name: str | None = None) -> str:
        """The canonical name of a plan; `vllm` is an alias of the built-in `vlm` plan."""
        key = name or self.engine
        return "vlm" if key == "vllm" and "vllm" not in self.plans else key

    def page_concurrency(self, plan_name: str) -> int:
        """Pages in flight for a plan: many when a VLM server does the work, else one per core."""
        uses_vlm = any(step.engine == "vlm" for step in self.plan(plan_name))
        return self.vlm_concurrency if uses_vlm else self.concurrency


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
