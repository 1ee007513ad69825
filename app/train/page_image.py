"""The page as a model saw it, for exported records: the profile an endpoint was asked with,
and the page image rendered at that profile's size."""

from __future__ import annotations

from pathlib import Path

from app.engines.vlm_image import model_image
from app.pdf.render import read_page
from app.pipeline.page_attempts import page_input
from app.profiles import BUILTIN, Profile
from app.settings import Settings


def profile_of(settings: Settings, endpoint: str | None) -> Profile:
    """The profile an attempt on `endpoint` was asked with (the generic one for an endpoint no
    longer configured)."""
    if endpoint in settings.vlm_endpoints:
        return settings.profile_of(endpoint or "")
    return BUILTIN["markdown"]


def write_page_image(
    settings: Settings,
    profile: Profile,
    pdf: Path,
    number: int,
    endpoint_name: str | None,
    path: Path,
) -> None:
    """The page image as the model saw it: rendered at the profile's size, as the pipeline
    rendered it (`page_input`: once, at that size)."""
    dpi, cap = settings.dpi, settings.max_image_side
    page = page_input(pdf, number, dpi, cap, read_page(pdf, number, dpi, cap), False)
    endpoint = settings.vlm_endpoints.get(endpoint_name or "")
    max_side = endpoint.max_image_side if endpoint else None
    model_image(page, profile.image, max_side).save(path, format="PNG")
