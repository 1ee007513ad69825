"""The documentation site is checked like code: its generated references match the code, its
hand-written tables name every command, route and package, and it builds strictly."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docsgen.api_reference import openapi_schema
from docsgen.cli_reference import command_options
from docsgen.references import references
from docsgen.regions import Region, RegionMissing, read_region, replace_region
from tests.conftest import unavailable

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _section(page: str, heading: str) -> str:
    text = _page(page)
    return text[text.index(heading) :].split("\n## ", 1)[0]


def test_the_generated_references_match_the_code() -> None:
    stale = [f"{r.page.name} ({r.name})" for r in references() if not r.is_current()]
    assert not stale, f"run `python -m docsgen write` (make docs-reference): {stale}"


def test_a_changed_region_is_stale_and_writing_restores_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Prose\n\n<!-- generated: x -->\nold\n<!-- end generated: x -->\nmore\n")
    region = Region(page, "x", "## New\n\nbody\n")
    assert not region.is_current()
    assert region.write() and region.is_current() and not region.write()
    assert page.read_text().startswith("# Prose\n") and page.read_text().endswith("x -->\nmore\n")
    assert read_region(page.read_text(), "x") == "## New\n\nbody"
    with pytest.raises(RegionMissing):
        replace_region("no markers", "x", "body")


def test_every_command_is_in_the_command_table_in_help_order() -> None:
    rows = [line for line in _page("cli.md").splitlines() if line.startswith("| `folio")]
    usages = [row.split("`")[1] for row in rows]
    positions = []
    for command in command_options():
        matches = [i for i, usage in enumerate(usages) if re.match(rf"{command}\b", usage)]
        assert matches, f"{command} is missing from the table in docs/cli.md"
        positions.append(matches[0])
    assert positions == sorted(positions), "docs/cli.md's table is not in `folio --help` order"
    assert "`folio --version`" in _page("cli.md")


def test_every_route_is_in_the_route_table() -> None:
    table = _page("api.md")
    for path, item in openapi_schema()["paths"].items():
        shown = re.sub(r"\{\w+\}", "{id}", path).replace("pages/{id}", "pages/{page_id}")
        for method in item:
            assert f"`{method.upper()} {shown}" in table, f"{method.upper()} {path} in api.md"


def test_the_architecture_names_every_package_at_the_top_of_app() -> None:
    page = _page("architecture.md")
    for entry in sorted((ROOT / "app").iterdir()):
        if entry.name.startswith("__") or entry.suffix not in ("", ".py"):
            continue
        named = f"`app/{entry.name}`"
        assert named in page, f"docs/architecture.md does not name {named}"


def test_the_test_prerequisites_match_the_scripts_that_need_them() -> None:
    """Getting started names what `make test` needs as the install scripts pin it."""
    setup = (ROOT / "tests" / "vllm_cpu" / "setup_env.sh").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    torch = re.search(r"torch==[\w.+]+", setup)
    python = re.search(r"FOLIO_VLLM_PYTHON:-([\w.]+)", setup)
    assert torch and python
    section = _section("getting-started.md", "## Running the tests")
    needed = (torch.group(0), f"`{python.group(1)}`", "Chromium", "PostgreSQL", "Redis",
              "`pdftoppm`", "`make olmocr-env`")  # fmt: skip
    for name in needed:
        assert name in section, f"docs/getting-started.md does not mention {name}"
    assert 'apt-get install -y -qq "${packages[@]}"' in ci and python.group(1) in ci
    for command, package in (("chromium", "chromium"), ("pdftoppm", "poppler-utils")):
        assert f"command -v {command} >/dev/null 2>&1 || packages+=({package})" in ci
    assert "olmocr-env" in ci and "\nolmocr-env:" in (ROOT / "Makefile").read_text()


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        unavailable("mkdocs is not installed (pip install -e '.[docs]')")
    assert mkdocs
    command = [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")]
    env = {"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").exists()


def test_the_pictures_are_drawn_from_the_committed_runs(tmp_path: Path) -> None:
    """`make docs-pictures` from the committed results gives the committed pictures back, and
    the timeline shows every looping attempt of its three batches in red."""
    from docsgen.pictures import draw_all
    from docsgen.runs import committed_batches

    drawn = draw_all(tmp_path)
    assert {p.name for p in drawn} >= {"batch-timeline.svg", "cost-split.svg", "tax-arms.svg"}
    for picture in drawn:
        committed = DOCS / "images" / picture.name
        assert picture.read_text() == committed.read_text(), f"run `make docs-pictures`: {picture}"
    loops = sum(
        a.status == "degenerate"
        for batch in committed_batches(("B", "A", "F")).values()
        for a in batch.rows.attempts
    )
    assert loops > 0
    assert (tmp_path / "batch-timeline.svg").read_text().count('fill="#d62728"><title>') == loops
