"""The migrations build exactly the models' schema, 0002 goes down and up again, and any
number of processes may start on a fresh database at once (issue 62, defect 7)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from app.db.engine import alembic_config, upgrade
from app.db.models import Base
from tests.conftest import POSTGRES_URL, unavailable

ROOT = Path(__file__).resolve().parents[1]


def test_migrations_match_the_models_and_downgrade(db_url: str) -> None:
    upgrade(db_url)
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
        command.downgrade(alembic_config(db_url), "0001")
        assert "api_keys" not in inspect(engine).get_table_names()
        upgrade(db_url)
        assert "api_keys" in inspect(engine).get_table_names()
    finally:
        engine.dispose()


RACERS = 4  # processes started at once on one fresh database
_RACER = """
import sys, time
from pathlib import Path
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.005)
from app.db.engine import upgrade
upgrade(sys.argv[1])
"""


def _race(url: str, tmp_path: Path) -> list[subprocess.CompletedProcess[str]]:
    """RACERS processes that import everything, wait for one signal, then migrate at once."""
    go = tmp_path / "go"
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, url, str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(RACERS)
    ]
    time.sleep(0.5)  # not a bound: a late racer only races less, it never fails the test
    go.touch()
    for racer in racers:
        racer.wait(timeout=300)
    return [
        subprocess.CompletedProcess(r.args, r.returncode, r.stdout.read(), r.stderr.read())  # type: ignore[union-attr]
        for r in racers
    ]


def _assert_all_migrated(url: str, done: list[subprocess.CompletedProcess[str]]) -> None:
    assert [d.returncode for d in done] == [0] * RACERS, [d.stderr[-2000:] for d in done]
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    finally:
        engine.dispose()


def test_processes_racing_on_a_fresh_sqlite_database_all_start(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    _assert_all_migrated(url, _race(url, tmp_path))


@pytest.mark.postgres
def test_processes_racing_on_a_fresh_postgres_database_all_start(tmp_path: Path) -> None:
    name = f"folio_race_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        admin.dispose()
        unavailable(f"PostgreSQL at {POSTGRES_URL}: {exc}")
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    try:
        _assert_all_migrated(url, _race(url, tmp_path))
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
