"""How `folio --help` reads: commands in named panels, usage lines in capitals, `--version`."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

Target = Callable[..., Any] | typer.Typer
Panels = dict[str, list[tuple[str, Target]]]


class FolioCommand(TyperCommand):
    """Usage lines as click writes them (`folio run [OPTIONS] SOURCE`), not typer's `{source}`."""

    # `ctx: Any`: typer vendors click, and its Context class is private.
    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = (param.metavar or param.name or "").upper()
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces


class FolioGroup(TyperGroup):
    """Lists commands in registration order, sub-apps included (typer would put those last)."""

    command_order: tuple[str, ...] = ()

    def list_commands(self, ctx: Any) -> list[str]:
        rank = {name: i for i, name in enumerate(self.command_order)}
        return sorted(super().list_commands(ctx), key=lambda name: rank.get(name, -1))


def register(app: typer.Typer, panels: Panels) -> None:
    """Add every command to `app` under its panel, in order; sub-apps get the same usage lines."""
    for panel, commands in panels.items():
        for name, target in commands:
            if isinstance(target, typer.Typer):
                for info in target.registered_commands:
                    if info.cls in (None, TyperCommand):
                        info.cls = FolioCommand
                app.add_typer(target, name=name, rich_help_panel=panel)
            else:
                app.command(name, rich_help_panel=panel, cls=FolioCommand)(target)
    order = tuple(name for commands in panels.values() for name, _ in commands)
    app.info.cls = type("FolioGroup", (FolioGroup,), {"command_order": order})


def folio_version() -> str:
    try:
        return version("folio")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def show_version(value: bool) -> None:
    if value:
        typer.echo(f"folio {folio_version()}")
        raise typer.Exit()
