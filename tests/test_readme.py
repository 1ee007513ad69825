"""The README's CLI and configuration sections match the code."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from app.cli.main import app
from app.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _cli_rows() -> list[str]:
    table = README[README.index("| command | what it does |") :].split("\n\n", 1)[0]
    return [line for line in table.splitlines()[2:]]


def _commands() -> dict[str, list[str]]:
    """`folio NAME` (or `folio GROUP NAME`) -> its long options, in `folio --help` order."""
    group = typer.main.get_group(app)
    found: dict[str, list[str]] = {}
    for name in group.list_commands(None):  # type: ignore[arg-type]
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


def test_every_setting_is_documented() -> None:
    missing = [name for name in Settings.model_fields if f"| `{name}` |" not in README]
    assert not missing, f"settings missing from the README table: {missing}"


def test_every_command_and_option_is_in_the_readme_table_in_help_order() -> None:
    rows = _cli_rows()
    usages = [row.split("`")[1] for row in rows]
    positions = []
    for command, options in _commands().items():
        matches = [i for i, usage in enumerate(usages) if re.match(rf"{command}\b", usage)]
        assert matches, f"{command} is missing from the README's command table"
        usage = " ".join(usages[i] for i in matches)
        missing = [opt for opt in options if not re.search(rf"{opt}\b", usage)]
        assert not missing, f"{command}: options missing from the README table: {missing}"
        positions.append(matches[0])
    assert positions == sorted(positions), "the README table is not in `folio --help` order"
    assert "`folio --version`" in README


def test_the_test_prerequisites_match_the_scripts_that_need_them() -> None:
    """The README names what `make test` needs as the install scripts pin it."""
    root = Path(__file__).resolve().parents[1]
    setup = (root / "tests" / "vllm_cpu" / "setup_env.sh").read_text()
    ci = (root / ".ci" / "run").read_text()
    torch = re.search(r"torch==[\w.+]+", setup)
    python = re.search(r"FOLIO_VLLM_PYTHON:-([\w.]+)", setup)
    assert torch and python
    section = README[README.index("## Running the tests") :].split("\n## ", 1)[0]
    for needed in (torch.group(0), f"`{python.group(1)}`", "Chromium", "PostgreSQL", "Redis"):
        assert needed in section, f"the README's test section does not mention {needed}"
    assert "apt-get install -y -qq chromium" in ci and python.group(1) in ci
