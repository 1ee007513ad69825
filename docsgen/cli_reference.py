"""The CLI reference, read from the Typer app: every command in `folio --help` order, under its
help panel, with its usage line, its help text and every argument and option as click prints
them (so the page says what `folio COMMAND --help` says)."""

from __future__ import annotations

import inspect
from typing import Any

import typer.main

from app.cli.main import app


def cli_reference() -> str:
    group: Any = typer.main.get_command(app)
    root = _context(group, "folio", None)
    lines: list[str] = []
    panel = None
    for name in group.list_commands(root):
        command = group.commands[name]
        here = getattr(command, "rich_help_panel", None) or "Other"
        if here != panel:
            panel = here
            lines += [f"## {panel}", ""]
        lines += _command_section(command, _context(command, name, root))
    lines += ["## Version", "", "`folio --version` prints Folio's version and exits."]
    return "\n".join(lines).rstrip() + "\n"


def _context(command: Any, name: str, parent: Any) -> Any:
    """A click context for `command` (typer vendors click: its classes are typer's own)."""
    return command.context_class(command, info_name=name, parent=parent)


def _command_section(command: Any, ctx: Any) -> list[str]:
    subcommands: dict[str, Any] = getattr(command, "commands", {})
    if subcommands:
        lines: list[str] = []
        for sub_name in command.list_commands(ctx):
            sub = subcommands[sub_name]
            lines += _command_section(sub, _context(sub, sub_name, ctx))
        return lines
    path = ctx.command_path
    usage = command.get_usage(ctx).removeprefix("Usage: ")
    lines = [f"### `{path}`", "", _help_text(command), "", "```text", usage, "```", ""]
    for param in command.get_params(ctx):
        item = _param_item(param, ctx)
        if item:
            lines.append(item)
    return [*lines, ""]


def _help_text(command: Any) -> str:
    text = inspect.cleandoc(command.help or "")
    return text.replace("\b\n", "")


def _param_item(param: Any, ctx: Any) -> str | None:
    if param.param_type_name == "argument":
        name = (param.metavar or param.name or "").upper()
        required = "" if param.required else " (optional)"
        return f"- `{name}`{required}: {_clean(getattr(param, 'help', '') or '')}"
    record: Any = param.get_help_record(ctx)
    if record is None or "--help" in param.opts:
        return None
    opts, help_text = record
    return f"- `{opts}`: {_clean(help_text)}"


def _clean(text: str) -> str:
    return " ".join(text.split())


def command_options() -> dict[str, list[str]]:
    """`folio NAME` (or `folio GROUP NAME`) -> its long options, in `folio --help` order."""
    group: Any = typer.main.get_command(app)
    root = _context(group, "folio", None)
    found: dict[str, list[str]] = {}
    for name in group.list_commands(root):
        command = group.commands[name]
        subs = getattr(command, "commands", None) or {"": command}
        for sub_name, sub in subs.items():
            options = [
                opt
                for param in sub.params
                for opt in param.opts
                if opt.startswith("--") and opt != "--help"
            ]
            found[f"folio {name} {sub_name}".strip()] = options
    return found
