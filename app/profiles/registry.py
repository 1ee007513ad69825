"""Finding a profile: by name among the built-ins and the user's own, or by the model's name."""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase

from app.errors import ConfigError
from app.profiles import builtin, builtin_more
from app.profiles.model import Profile

GENERIC = "markdown"


def builtin_profiles() -> dict[str, Profile]:
    """Every built-in profile by id, in the order `folio models` lists them."""
    made = [
        builtin.olmocr2(),
        builtin.nanonets(),
        builtin.dots("layout"),
        builtin.dots("text"),
        builtin.deepseek(grounding=False),
        builtin.deepseek(grounding=True),
        builtin_more.chandra(),
        builtin_more.lightonocr2(),
        builtin_more.granite_docling(),
        builtin_more.qwenvl_html(),
        builtin_more.markdown(),
        builtin_more.dharma(),
        builtin_more.paddleocr_vl_page(),
        builtin_more.mineru25_page(),
    ]
    return {profile.id: profile for profile in made}


BUILTIN = builtin_profiles()


def all_profiles(user: Mapping[str, Profile] | None = None) -> dict[str, Profile]:
    """The built-ins with the user's profiles (folio.toml `[profiles.<id>]`) over them."""
    return BUILTIN | dict(user or {})


def profile_for_model(model: str, user: Mapping[str, Profile] | None = None) -> Profile:
    """The first profile whose model globs match `model`; the generic one when none does."""
    for profile in all_profiles(user).values():
        if any(fnmatchcase(model, pattern) for pattern in profile.models):
            return profile
    return BUILTIN[GENERIC]


def check_profiles(
    user: Mapping[str, Profile],
    endpoints: Mapping[str, tuple[str | None, str]],
    folio_xargs: set[str],
) -> None:
    """ConfigError unless every user profile's id is its name, no profile sets one of Folio's
    own `vllm_xargs`, and every endpoint's (profile, model) finds a profile."""
    for name, profile in user.items():
        if profile.id != name:
            raise ConfigError(f"profile {name!r} has id {profile.id!r}: they must match")
    for profile in all_profiles(user).values():
        clash = folio_xargs & profile.request.vllm_xargs.keys()
        if clash:
            raise ConfigError(
                f"profile {profile.id!r}: vllm_xargs {', '.join(sorted(clash))} belong to "
                "Folio (its loop stop and n-gram guard); set them in the plan instead"
            )
    for name, (profile_name, model) in endpoints.items():
        try:
            resolve_profile(profile_name, model, user)
        except ConfigError as exc:
            raise ConfigError(f"vlm_endpoints.{name}: {exc}") from exc


def resolve_profile(
    name: str | None, model: str, user: Mapping[str, Profile] | None = None
) -> Profile:
    """The profile called `name`, or the one for `model` when no name is given."""
    if name is None:
        return profile_for_model(model, user)
    known = all_profiles(user)
    if name not in known:
        raise ConfigError(f"unknown profile {name!r}; known: {', '.join(sorted(known))}")
    return known[name]
