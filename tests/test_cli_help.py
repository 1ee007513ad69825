"""`folio --help` as a new user reads it: panels in the order they meet the commands."""

from __future__ import annotations

import re
from importlib.metadata import version

import typer.main
from typer.testing import CliRunner

from app.cli.main import COMMAND_PANELS, app

runner = CliRunner()
FIRST_MET = [
    "run",
    "report",
    "results",
    "scan",
    "export-dpo",
    "train-dpo",
    "eval",
    "serve",
    "apikey",
    "watch",
    "submit",
    "worker",
    "status",
    "recover",
    "db",
    "samples",
]


def help_text(*args: str) -> str:
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "100"}, prog_name="folio")
    assert result.exit_code == 0, result.output
    return result.stdout


def listed_commands(text: str) -> list[str]:
    """Command names in the order `folio --help` lists them."""
    return re.findall(r"^│ ([a-z][a-z-]+)\s{2,}", text, flags=re.M)


def test_commands_are_listed_in_the_order_a_user_meets_them() -> None:
    listed = listed_commands(help_text())
    assert [name for name in listed if name in FIRST_MET] == FIRST_MET
    registered = [name for commands in COMMAND_PANELS.values() for name, _ in commands]
    assert listed == registered


def test_panels_are_titled_and_in_order() -> None:
    text = help_text()
    titles = [title.strip() for title in re.findall(r"╭─ ([^─]+)─", text)]
    assert titles == ["Options", *COMMAND_PANELS]


def test_every_command_is_registered_in_a_panel() -> None:
    """A command added with a bare `app.command()` would land in an unnamed panel on top."""
    group = typer.main.get_group(app)
    in_panels = {name for commands in COMMAND_PANELS.values() for name, _ in commands}
    assert set(group.commands) == in_panels
    assert all(getattr(c, "rich_help_panel", None) for c in group.commands.values())


def test_usage_lines_name_arguments_in_capitals() -> None:
    expected = {
        ("run",): "folio run [OPTIONS] SOURCE",
        ("report",): "folio report [OPTIONS] JOB",
        ("export-dpo",): "folio export-dpo [OPTIONS] JOB...",
        ("recover",): "folio recover [OPTIONS] [JOB]",
        ("scan",): "folio scan [OPTIONS] PATH...",
        ("apikey", "revoke"): "folio apikey revoke [OPTIONS] ID|NAME",
    }
    for args, usage in expected.items():
        assert f"Usage: {usage}" in help_text(*args)
    group = typer.main.get_group(app)
    for name in group.commands:
        assert "{" not in help_text(name).splitlines()[1], name


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"folio {version('folio')}"
