"""Where PostgreSQL and SQLite differ, in one place: the rest of `app/db` writes one SQL.

- SQLite's connections: another thread may use them, a lock is waited for, WAL lets readers
  read while workers write, and foreign keys (ON DELETE CASCADE) hold only when asked;
- SQLite hands datetimes back without their zone, though Folio writes them in UTC (`as_utc`);
- an INSERT that leaves an existing row as it is (`insert_new`): each dialect spells
  ON CONFLICT DO NOTHING with its own construct.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, event
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import DeclarativeBase, Session


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def sqlite_file(url: str) -> Path | None:
    """The file an SQLite URL names (its folder may have to be made); None for the others."""
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url.removeprefix("sqlite:///"))
    return None


def connect_args(url: str) -> dict[str, Any]:
    """SQLite: a connection pooled for any thread, and 30 s of waiting on a writer's lock."""
    return {"check_same_thread": False, "timeout": 30} if is_sqlite(url) else {}


def prepare_sqlite(engine: Engine) -> None:
    event.listen(engine, "connect", _sqlite_pragmas)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets the progress display read while worker threads write.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def as_utc(moment: datetime) -> datetime:
    """A datetime as Folio wrote it: SQLite gives it back without its zone (UTC)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def insert_new(
    bind: Session | Connection, model: type[DeclarativeBase], row: dict[str, Any]
) -> int:
    """Insert `row` unless a unique key already holds one like it: 1 row inserted, or 0."""
    name = bind.get_bind().dialect.name if isinstance(bind, Session) else bind.dialect.name
    insert = pg_insert if name == "postgresql" else sqlite_insert
    result = bind.execute(insert(model).values(**row).on_conflict_do_nothing())
    return int(result.rowcount)  # type: ignore[attr-defined]
