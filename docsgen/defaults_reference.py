"""Defaults the prose pages state, written from the code: the built-in plans and each profile's
`vlm` plan (the settings and the profiles), the default endpoint, and the GPU example (the
`vllm` service and the `primary` endpoint of `docker-compose.yml`)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import yaml

from app.profiles import BUILTIN, resolve_profile
from app.profiles.model import LadderStep, Profile
from app.settings import PlanStep, Settings, builtin_vlm_plan
from docsgen.settings_reference import defaults

COMPOSE = Path(__file__).resolve().parents[1] / "docker-compose.yml"
_ENGINES = {
    "textlayer": "PDF text layer (when it passes the quality gate)",
    "tesseract": "Tesseract",
}


def default_settings() -> dict[str, Any]:
    """Every setting's default, as the code gives it (no environment, no folio.toml)."""
    return defaults(Settings)


def _step(step: PlanStep, primary: Profile) -> str:
    if step.engine != "vlm":
        return _ENGINES[step.engine]
    fields = ", ".join(f"{key} {value}" for key, value in step.sampling().items())
    if step.endpoint == "primary":
        fields = fields or f"{primary.id}'s own sampling"
    return f"`{step.endpoint}` model, `{step.name}` ({fields})"


def plans_table() -> str:
    """The built-in plans, one row each, with their steps in order."""
    values = default_settings()
    primary = _primary_profile(values)
    rows = ["| plan | steps, in order |", "|---|---|"]
    for name, steps in values["plans"].items():
        label = f"`{name}`" + (" (default)" if name == values["engine"] else "")
        label += " (alias `vllm`)" if name == "vlm" else ""
        rows.append(f"| {label} | {'; '.join(_step(s, primary) for s in steps)} |")
    note = (
        f"The `vlm` plan's `primary` steps are the primary endpoint's profile's own ladder: "
        f"`{primary.id}`'s here, the default; another profile brings its own "
        "([Models](models.md#each-profiles-vlm-plan))."
    )
    return "\n".join([*rows, "", note]) + "\n"


def _primary_profile(values: dict[str, Any]) -> Profile:
    endpoint = values["vlm_endpoints"]["primary"]
    return resolve_profile(endpoint.profile, endpoint.model)


def _rung(rung: LadderStep, profile: Profile) -> str:
    own = profile.request.sampling
    temperature = own.temperature if rung.temperature is None else rung.temperature
    top_p = own.top_p if rung.top_p is None else rung.top_p
    return f"`{rung.name}` (temperature {temperature}, top_p {top_p})"


def vlm_plans_table() -> str:
    """Each built-in profile's rungs of the `vlm` plan, where its ladder comes from."""
    rows = ["| profile | `vlm` plan on the primary model | from |", "|---|---|---|"]
    for profile in BUILTIN.values():
        rungs = ", ".join(_rung(r, profile) for r in profile.plan_ladder())
        if profile.ladder:
            source = profile.sources.get("ladder") or profile.sources.get("sampling")
            where = f"its ladder ({source})" if source else "its ladder"
            if profile.plan_rungs:
                where += f", rungs {', '.join(str(i) for i in profile.plan_rungs)}"
        else:
            where = "no retry ladder in its sources: one attempt"
        rows.append(f"| `{profile.id}` | {rungs} | {where} |")
    default = _primary_profile(default_settings())
    after = builtin_vlm_plan(default)[len(default.plan_ladder()) :]
    tail = f"Then, whatever the profile: {'; '.join(_step(s, default) for s in after)}."
    return "\n".join([*rows, "", tail]) + "\n"


def default_endpoint() -> str:
    """The default `primary` endpoint, in one sentence."""
    endpoints = default_settings()["vlm_endpoints"]
    primary = endpoints["primary"]
    others = sorted(set(endpoints) - {"primary"})
    extra = f" (and {', '.join(others)})" if others else ""
    return (
        f"The default endpoint is `primary`{extra}, at `{primary.base_url}`, serving "
        f"`{primary.model}` with the `{primary.profile}` profile.\n"
    )


def compose_gpu() -> dict[str, Any]:
    """The `vllm` service's command line and the `primary` endpoint, as docker-compose.yml
    sets them."""
    compose = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    command = list(compose["services"]["vllm"]["command"])
    endpoints = json.loads(compose["x-folio"]["environment"]["FOLIO_VLM_ENDPOINTS"])
    return {"command": command, "primary": endpoints["primary"]}


def gpu_example() -> str:
    """`vllm serve` and FOLIO_VLM_ENDPOINTS as docker-compose.yml runs them."""
    found = compose_gpu()
    args = found["command"]
    model = args[args.index("--model") + 1]
    flags = args[: args.index("--model")] + args[args.index("--model") + 2 :]
    endpoint = json.dumps({"primary": found["primary"]})
    return (
        "\n".join(
            [
                "```",
                f"vllm serve {model} {shlex.join(flags)}",
                f"FOLIO_VLM_ENDPOINTS={shlex.quote(endpoint)}",
                "```",
            ]
        )
        + "\n"
    )
