"""`folio doctor`'s verdicts: what is wrong between a server and the profile that asks it,
in plain words (pure: the server's answers come in as values)."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from app.profiles.model import Profile

# Room left for the prompt (the page image is most of it) beside the completion.
PROMPT_ALLOWANCE = 4096


@dataclass(frozen=True)
class Finding:
    level: Literal["ok", "warning", "problem"]
    text: str


def diagnose(
    profile: Profile,
    model: str,
    served: dict[str, int | None],
    stops: tuple[bool, bool, bool],
    processors: dict[str, bool],
    max_tokens: int | None = None,
) -> list[Finding]:
    """Findings about serving `model` with `profile`: `served` maps each served model to its
    max_model_len, `stops` is (plugin, abort route, repetition_detection)."""
    found = [_model_finding(model, served)]
    if model in served:
        found.append(_context_finding(profile, served[model], max_tokens))
    if profile.models and not any(fnmatchcase(model, glob) for glob in profile.models):
        found.append(
            Finding(
                "warning",
                f"profile {profile.id} is made for {', '.join(profile.models)}, not {model}: "
                "the model may answer in another format than the profile reads",
            )
        )
    found.append(_stop_finding(*stops))
    for probe, loaded in processors.items():
        flag = next((f for f in profile.serve_flags if "logits-processors" in f), probe)
        found.append(
            Finding("ok", f"the server-side {probe} is loaded")
            if loaded
            else Finding(
                "problem",
                f"the server does not run the {probe} the model needs against loops: "
                f"start vLLM with {flag}",
            )
        )
    if profile.status in ("experimental", "approximation"):
        found.append(
            Finding("warning", f"profile {profile.id} is {profile.status}: {profile.note}")
        )
    return found


def _model_finding(model: str, served: dict[str, int | None]) -> Finding:
    names = ", ".join(served) or "nothing"
    if model in served:
        return Finding("ok", f"the server serves {model}")
    return Finding("problem", f"the server does not serve {model} (it serves {names})")


def _context_finding(profile: Profile, length: int | None, max_tokens: int | None) -> Finding:
    cap = max_tokens or profile.request.max_tokens
    if length is None:
        return Finding("warning", "the server does not say its max_model_len")
    if length < cap + PROMPT_ALLOWANCE:
        return Finding(
            "problem",
            f"max_model_len is {length}: too short for {cap} completion tokens "
            f"plus the page image; start vLLM with --max-model-len {cap + PROMPT_ALLOWANCE} "
            "or more",
        )
    return Finding("ok", f"max_model_len {length} holds {cap} completion tokens")


def _stop_finding(plugin: bool, abort: bool, repetition: bool) -> Finding:
    live = [
        name
        for name, on in (
            ("Folio's loop-stop plugin", plugin),
            ("the abort route", abort),
            ("vLLM's repetition_detection", repetition),
        )
        if on
    ]
    if live:
        return Finding("ok", f"loop stops live: {', '.join(live)}")
    return Finding(
        "warning",
        "no server-side loop stop: a loop is stopped only by closing the stream, and the "
        "server may generate on for a while (install Folio's vLLM plugin, Dockerfile.vllm)",
    )
