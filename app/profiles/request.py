"""The chat request a profile asks for: messages, sampling, and the server-side arguments."""

from __future__ import annotations

from typing import Any

from app.errors import ConfigError
from app.profiles.model import Profile

IMAGE_PLACEHOLDER = {"type": "image"}
_OVERRIDES = (
    "temperature",
    "top_p",
    "top_k",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "seed",
)


def user_content(profile: Profile, image_part: dict[str, Any]) -> list[dict[str, Any]]:
    """The user turn's parts in the order the model was trained on (image only when the
    profile has no prompt)."""
    shape = profile.request
    if shape.prompt is None and not shape.text_prefix:
        return [image_part]
    text = {"type": "text", "text": shape.text_prefix + (shape.prompt or "")}
    return [text, image_part] if shape.order == "text_first" else [image_part, text]


def messages(profile: Profile, image_part: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat messages; `image_part` is an image_url part, or IMAGE_PLACEHOLDER for DPO."""
    turns: list[dict[str, Any]] = []
    if profile.request.system is not None:
        turns.append({"role": "system", "content": profile.request.system})
    turns.append({"role": "user", "content": user_content(profile, image_part)})
    return turns


def sampling_fields(profile: Profile, overrides: dict[str, Any]) -> dict[str, Any]:
    """Every decoding field, explicit: the profile's, with a plan step's values over them."""
    fields: dict[str, Any] = profile.request.sampling.model_dump(exclude_none=True)
    fields |= {k: v for k in _OVERRIDES if (v := overrides.get(k)) is not None}
    return fields


def merge_xargs(own: dict[str, Any], folio: dict[str, Any]) -> dict[str, Any]:
    """The model's `vllm_xargs` and Folio's together; a key both set differently is a
    config error (one of them would silently lose)."""
    clash = sorted(k for k in own.keys() & folio.keys() if own[k] != folio[k])
    if clash:
        raise ConfigError(f"vllm_xargs {', '.join(clash)}: set by the profile and by Folio")
    return own | folio


def request_fields(
    profile: Profile, overrides: dict[str, Any], folio_xargs: dict[str, Any]
) -> dict[str, Any]:
    """The body fields besides model, messages and streaming."""
    shape = profile.request
    body: dict[str, Any] = {"max_tokens": overrides.get("max_tokens") or shape.max_tokens}
    body |= sampling_fields(profile, overrides)
    if shape.stop:
        body["stop"] = list(shape.stop)
    body |= shape.extra_body
    xargs = merge_xargs(shape.vllm_xargs, folio_xargs)
    if xargs:
        body["vllm_xargs"] = xargs
    return body
