"""The README's CLI and configuration sections match the code."""

from __future__ import annotations

from pathlib import Path

import typer.main

from app.cli.main import app
from app.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_setting_is_documented() -> None:
    missing = [name for name in Settings.model_fields if f"| `{name}` |" not in README]
    assert not missing, f"settings missing from the README table: {missing}"


def test_every_command_is_documented() -> None:
    group = typer.main.get_group(app)
    names = []
    for name, command in group.commands.items():
        sub = getattr(command, "commands", None)
        names += [f"folio {name} {s}" for s in sub] if sub else [f"folio {name}"]
    missing = [n for n in names if f"`{n}" not in README]
    assert not missing, f"commands missing from the README: {missing}"
