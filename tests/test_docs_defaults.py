"""Defaults the prose pages state, checked against the code: a changed default fails here until
the page says the new one. (Tables and the default endpoint are written by `docsgen`, checked
by test_docs; these are the defaults stated inside sentences.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel

from app.cli.main import app
from docsgen.defaults_reference import compose_gpu, default_settings
from docsgen.settings_reference import defaults

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = default_settings()


def _prose(page: str) -> str:
    """The page with its line breaks (and a list item's indentation) as single spaces."""
    return re.sub(r"\s+", " ", (ROOT / page).read_text(encoding="utf-8"))


def option_default(command: str, option: str) -> Any:
    """The default of `folio COMMAND --OPTION`, as the CLI declares it."""
    found = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return next(p.default for p in found.params if f"--{option}" in p.opts)


# (page, the sentence's words as the code's defaults make them)
STATED = [
    (
        "docs/deploying.md",
        f"`pages_per_task` pages (default {DEFAULTS['pages_per_task']}; `FOLIO_PAGES_PER_TASK`)",
    ),
    ("docs/integrations.md", f"`repeat_loop_cap` (default {DEFAULTS['repeat_loop_cap']})"),
    (
        "docs/getting-started.md",
        f"(`textlayer_gate`, {'on' if DEFAULTS['textlayer_gate'] else 'off'} by default)",
    ),
    ("docs/cli.md", f"`--out` (default `{option_default('run', 'out')}/`)"),
    ("docs/cli.md", f"`DIR/eval.html` (default `{option_default('eval', 'out')}/`)"),
    ("docs/api.md", f"folio serve --host 0.0.0.0 --port {option_default('serve', 'port')}"),
    ("docs/deploying.md", f"on port {option_default('serve', 'port')})"),
    ("README.md", f"the API on port {option_default('serve', 'port')}"),
]


@pytest.mark.parametrize(("page", "words"), STATED, ids=[f"{p}:{w[:30]}" for p, w in STATED])
def test_a_default_stated_in_a_sentence_is_the_codes(page: str, words: str) -> None:
    assert words in _prose(page), f"{page} should say: {words}"


def _settings_tables() -> list[tuple[str, str, str]]:
    """(page, setting, default) of every row of a `| setting | default | ... |` table."""
    rows = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("| setting | default |"):
                continue
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                cells = [c.strip() for c in row.strip("|").split("|")]
                rows.append((page.name, cells[0].strip("`"), cells[1]))
    return rows


def _code_default(dotted: str) -> Any:
    value: Any = DEFAULTS
    for part in dotted.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value


def test_every_settings_table_in_the_prose_states_the_codes_defaults() -> None:
    rows = _settings_tables()
    assert len(rows) >= 9  # integrations.md's table, at least
    for page, setting, stated in rows:
        value = _code_default(setting)
        if stated == "see below":
            assert isinstance(value, BaseModel), (page, setting)
            continue
        if value is None:  # no default: the page says what applies instead
            assert stated.startswith("unset"), f"{page}: `{setting}` is unset in the code"
            continue
        if isinstance(value, list | dict) and not value:
            assert stated == "empty", f"{page}: `{setting}` is empty in the code"
            continue
        if isinstance(value, Path):  # under the data folder, which the machine decides
            assert stated == f"`<data_dir>/{value.name}`", f"{page}: `{setting}` is {value}"
            continue
        shown = stated.strip("`")
        expected = str(value).lower() if isinstance(value, bool) else value
        if isinstance(value, float):
            shown_value: Any = float(shown)
        elif isinstance(value, int) and not isinstance(value, bool):
            shown_value = int(shown)
        else:
            shown_value = shown
        assert shown_value == expected, f"{page}: `{setting}` is {value!r} in the code"


def test_compose_serves_the_settings_default_model_and_profile() -> None:
    """The deployment and the settings name one model: the docs state it once."""
    compose = compose_gpu()
    default = DEFAULTS["vlm_endpoints"]["primary"]
    command = compose["command"]
    assert command[command.index("--model") + 1] == default.model
    assert compose["primary"]["model"] == default.model
    assert compose["primary"]["profile"] == default.profile


def _field_defaults() -> dict[str, set[float]]:
    """Each setting's (and endpoint field's) numeric default, by name."""
    from app.settings import VlmEndpoint

    endpoint = defaults(VlmEndpoint)
    found: dict[str, set[float]] = {}
    for values in (DEFAULTS, endpoint):
        for name, value in values.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                found.setdefault(name, set()).add(float(value))
    return found


# "`page_lease_s` (60 s)", "(`worker_threads`, 32)": a default stated beside its setting
_BESIDE = re.compile(
    r"`(\w+)` \((\d[\d,]*(?:\.\d+)?)(?: s)?\)|\(`(\w+)`, (\d[\d,]*(?:\.\d+)?)(?: s)?\)"
)


def test_every_default_stated_beside_its_setting_is_the_codes() -> None:
    numeric = _field_defaults()
    seen = []
    pages = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    for page in pages:
        for match in _BESIDE.finditer(_prose(str(page.relative_to(ROOT)))):
            name = match.group(1) or match.group(3)
            stated = float((match.group(2) or match.group(4)).replace(",", ""))
            if name in numeric:
                seen.append(name)
                assert stated in numeric[name], f"{page.name}: `{name}` is {numeric[name]}"
    assert {"page_lease_s", "worker_threads", "max_concurrency", "events_poll_s"} <= set(seen)
