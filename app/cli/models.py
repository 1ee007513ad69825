"""`folio models` and `folio doctor`: the model profiles, and a server checked against one
(parse, delegate, show)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from app.cli import exit_codes
from app.cli.options import console, load_settings
from app.engines.vlm_doctor import check_endpoint
from app.errors import ConfigError
from app.profiles import Profile, all_profiles
from app.profiles.model import LadderStep

_MARK = {"ok": "[green]ok[/]", "warning": "[yellow]warning[/]", "problem": "[red]problem[/]"}


def models(
    profile: Annotated[
        str | None, typer.Argument(help="A profile to show in full (sources, flags, prompt).")
    ] = None,
) -> None:
    """List the model profiles: status, models, answer format and the `vllm serve` flags."""
    settings = load_settings()
    known = all_profiles(settings.profiles)
    if profile is not None:
        if profile not in known:
            console.print(f"[red]Unknown profile {profile!r}[/]; known: {', '.join(known)}")
            raise typer.Exit(exit_codes.CONFIG)
        _show_profile(known[profile])
        return
    out = Console(soft_wrap=True, highlight=False)
    for p in known.values():
        image = f"image {p.image.rule} {p.image.value}"
        out.print(f"[bold]{p.id}[/]  {p.status}  {p.response.format}  {image}")
        out.print(f"  models: {', '.join(p.models) or 'any, when named'}", markup=False)
        out.print(f"  {_plan_line(p)}", markup=False)
        out.print(f"  {_serve_line(p)}", markup=False)


def _rung(rung: LadderStep, profile: Profile) -> str:
    """A rung with the temperature and top_p it sends (the profile's where it sets none)."""
    own = profile.request.sampling
    temperature = own.temperature if rung.temperature is None else rung.temperature
    top_p = own.top_p if rung.top_p is None else rung.top_p
    return f"{rung.name} (T {temperature}, top_p {top_p})"


def _plan_line(profile: Profile) -> str:
    """The built-in `vlm` plan's rungs when the primary endpoint has this profile."""
    rungs = ", ".join(_rung(r, profile) for r in profile.plan_ladder())
    return f"vlm plan: {rungs}; then the fallback model, text layer, Tesseract"


def _serve_line(profile: Profile) -> str:
    model = next((m for m in profile.models if "*" not in m), "MODEL")
    return " ".join(["vllm serve", model, *profile.serve_flags])


def _show_profile(profile: Profile) -> None:
    out = Console(soft_wrap=True, highlight=False)
    out.print(f"[bold]{profile.id}[/] ({profile.tag}), {profile.status}")
    if profile.note:
        out.print(profile.note)
    out.print(f"models: {', '.join(profile.models) or 'any (by name)'}")
    for fact, source in profile.sources.items():
        out.print(f"source of {fact}: {source}")
    out.print(_serve_line(profile), markup=False)
    shape = profile.request
    out.print(f"request: {shape.order}, max_tokens {shape.max_tokens}, {shape.sampling}")
    if profile.ladder:
        out.print(
            f"retry ladder: {', '.join(_rung(r, profile) for r in profile.ladder)}", markup=False
        )
    out.print(_plan_line(profile), markup=False)
    out.print(f"system: {shape.system!r}", markup=False)
    out.print(f"prompt: {shape.prompt!r}", markup=False)


def doctor(
    endpoint: Annotated[
        str, typer.Argument(help="A configured endpoint name, or a server URL ending in /v1.")
    ],
    model: Annotated[
        str | None, typer.Option(help="Model to check (a URL's first served model by default).")
    ] = None,
    profile: Annotated[
        str | None, typer.Option(help="Profile to check against (the endpoint's by default).")
    ] = None,
) -> None:
    """Ask a server what it serves and say, in plain words, what is wrong for its profile."""
    settings = load_settings()
    try:
        checkup = check_endpoint(settings, endpoint, model, profile)
    except ConfigError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(exit_codes.CONFIG) from exc
    out = Console()
    out.print(f"{checkup.base_url}: {checkup.model} with profile {checkup.profile_tag}")
    for finding in checkup.findings:
        out.print(f"{_MARK[finding.level]} {finding.text}")
    if any(f.level == "problem" for f in checkup.findings):
        raise typer.Exit(exit_codes.CONFIG)
