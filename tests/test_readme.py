"""The README is the front door: short, its two commands first, and the first one works."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, re.DOTALL)


def test_the_readme_is_short_and_its_two_commands_come_first() -> None:
    assert len(README.splitlines()) <= 250
    install, tests = _bash_blocks()[:2]
    assert install.strip().startswith("python3 -m venv .venv && .venv/bin/pip install -e .")
    assert tests.strip() == "make test"
    assert re.search(r"^test:", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_quick_start_transcribes_the_samples(tmp_path: Path, sqlite_url: str) -> None:
    """The `folio run` of the README's first command, on the repository's own samples/."""
    command = _bash_blocks()[0].strip().split(" && ")[-1]
    program, *args = shlex.split(command)
    assert program == ".venv/bin/folio" and args[:2] == ["run", "samples/"]
    args = [args[0], str(ROOT / "samples"), "--out", str(tmp_path / "out")]
    env = {"FOLIO_DATABASE_URL": sqlite_url, "FOLIO_DATA_DIR": str(tmp_path / "data")}
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == exit_codes.OK, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["documents_done"] == 3 and summary["pages_failed"] == 0
    assert len(list((tmp_path / "out").glob("*.md"))) == 3


def test_every_relative_link_of_the_readme_resolves() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert links
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, missing
