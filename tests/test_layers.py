"""The layer contracts of `app/` (docs/architecture.md): a lower room never imports a higher one.

Every import statement counts, those inside functions too (a lazy import is still a
dependency), read from the source with `ast`: nothing is imported to check it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

EDGES = {"api", "cli"}  # commands and routes: parse input and delegate
RUNTIME = {"jobs", "distributed", "evaluate", "train"}  # facades over the page pipeline

# room -> the only rooms of app/ it may import: the pure rooms at the bottom and the seams
ONLY: dict[str, set[str]] = {
    # pure, at the bottom: the detector also runs inside vLLM's process
    "degeneration": set(),
    "textlayer": set(),
    "positions": set(),
    "errors": set(),
    "textmatch": set(),
    "domain": {"positions"},
    # Folio's code inside the vLLM server: the pure detector and nothing else
    "vllm_plugin": {"degeneration"},
    # model profiles are data and small pure parsers
    "profiles": {"errors"},
    # the settings read the profiles and the plugin's argument names, nothing that runs
    "settings": {"degeneration", "errors", "profiles", "vllm_plugin"},
    # the retry policy: a pure function of the plan, the history and the page
    "retry": {"domain", "settings", "textmatch"},
    # seams to outside systems
    "pdf": {"errors", "textlayer"},
    "storage": {"errors", "settings", "outbound"},
    # calls to URLs a caller gave: the address policy and the bounded call, nothing above
    "outbound": {"errors"},
    "scanread": {"textlayer"},  # RapidOCR, the second reader for scans
}

# room -> rooms of app/ above it, which it must never import
NEVER: dict[str, set[str]] = {
    "engines": {"db", "pipeline", "report", "webhooks", "progress", "storage", "retry"}
    | EDGES
    | RUNTIME,
    # the database sits under the pipeline, the runtime and the edges
    "db": {"pipeline", "engines", "report", "progress", "storage", "pdf"} | EDGES | RUNTIME,
    "report": {"pipeline", "engines", "webhooks", "storage"} | EDGES | RUNTIME,
    "servermetrics": {"pipeline", "engines", "report", "webhooks"} | EDGES | RUNTIME,
    "progress": {"pipeline", "engines", "report", "webhooks"} | EDGES | RUNTIME,
    "webhooks": {"engines", "report"} | EDGES | RUNTIME,
    "pipeline": EDGES | RUNTIME,
    # searchable PDFs: written from a job's results by the runtime, over the PDF, storage
    # and Tesseract seams; it reads no rows and runs no pages
    "searchable": {"db", "pipeline", "report", "webhooks", "progress", "retry"} | EDGES | RUNTIME,
    "jobs": EDGES | {"distributed", "evaluate", "train"},
    "distributed": EDGES | {"evaluate", "train"},
    "evaluate": EDGES | {"distributed", "train"},
    "train": EDGES | {"distributed"},
    "api": {"cli"},
    "cli": set(),
}


def _rooms() -> set[str]:
    return {p.stem for p in (ROOT / "app").iterdir() if not p.name.startswith("__")} - {""}


def _imports(path: Path) -> list[tuple[str, int]]:
    """The modules one file imports (absolute imports), with their lines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "app":  # `from app import jobs`: the names are the modules
                found += [(f"app.{alias.name}", node.lineno) for alias in node.names]
            else:
                found.append((node.module, node.lineno))
    return found


def _room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "workers":
        return "workers"
    return parts[1] if parts[0] == "app" and len(parts) > 1 else None


def _imported_rooms(room: str) -> dict[str, list[str]]:
    """Each room of app/ (and workers/) that `room` imports, with where."""
    base = ROOT / "app" / room
    files = sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
    taken: dict[str, list[str]] = {}
    for path in files:
        for module, line in _imports(path):
            other = _room_of(module)
            if other and other != room:
                taken.setdefault(other, []).append(f"{path.relative_to(ROOT)}:{line} {module}")
    return taken


def test_every_room_of_app_has_its_contract() -> None:
    """A new room of app/ says what it may import, or what it may not."""
    named = set(ONLY) | set(NEVER)
    assert not set(ONLY) & set(NEVER)
    assert _rooms() <= named, f"rooms without a contract: {sorted(_rooms() - named)}"
    assert named <= _rooms(), f"contracts of rooms gone: {sorted(named - _rooms())}"


@pytest.mark.parametrize("room", sorted(ONLY))
def test_a_pure_room_imports_only_what_it_may(room: str) -> None:
    taken = _imported_rooms(room)
    broken = {other: where for other, where in taken.items() if other not in ONLY[room]}
    assert not broken, f"app/{room} imports more than {sorted(ONLY[room])}: {broken}"


@pytest.mark.parametrize("room", sorted(NEVER))
def test_a_room_never_imports_the_rooms_above_it(room: str) -> None:
    taken = _imported_rooms(room)
    broken = {other: where for other, where in taken.items() if other in NEVER[room]}
    assert not broken, f"app/{room} imports rooms above it: {broken}"


@pytest.mark.parametrize("room", sorted(set(ONLY) | set(NEVER)))
def test_app_never_imports_workers(room: str) -> None:
    assert "workers" not in _imported_rooms(room), _imported_rooms(room).get("workers")


def test_only_the_report_s_loader_reads_the_database() -> None:
    """The report's figures are pure: rows come in through load.py (build.py hands it the
    database); the Prometheus counters read no rows either."""
    readers = set()
    for path in (ROOT / "app" / "report").glob("*.py"):
        if any(module.startswith("app.db") for module, _ in _imports(path)):
            readers.add(path.name)
    assert readers == {"load.py", "build.py"}


def test_the_contracts_see_imports_inside_functions() -> None:
    """The settings check the plugin's argument names with an import inside a method: the
    reading that the contracts rest on finds it, so a lazy import cannot slip past them."""
    taken = _imported_rooms("settings")
    assert any("app.vllm_plugin" in where for where in taken.get("vllm_plugin", []))
    assert "db" in _imported_rooms("report") and "db" not in _imported_rooms("retry")


def _imports_sqlalchemy(path: Path) -> bool:
    return any(module.split(".")[0] == "sqlalchemy" for module, _ in _imports(path))


def test_only_the_database_room_and_migrations_import_sqlalchemy() -> None:
    """SQL is written in app/db (and Alembic's migrations): no other module of app/ or
    workers/ imports SQLAlchemy, not even for a type or an exception (app/db names those)."""
    writers = sorted(
        str(path.relative_to(ROOT))
        for room in ("app", "workers")
        for path in (ROOT / room).rglob("*.py")
        if not path.is_relative_to(ROOT / "app" / "db") and _imports_sqlalchemy(path)
    )
    assert not writers, f"SQL outside app/db: {writers}"
    assert _imports_sqlalchemy(ROOT / "app" / "db" / "pages.py")  # the reading sees them
