"""The database seam: engines and sessions from a URL, migrated before first use."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Dialect, Engine, create_engine, event, exc, text
from sqlalchemy.orm import Session, sessionmaker

import migrations
from app.db.dialect import connect_args, is_sqlite, prepare_sqlite, sqlite_file
from app.db.migration_lock import migration_lock

_lock = threading.Lock()
_engines: dict[str, Engine] = {}
# A pooled connection idle for longer is tested before use; a busy worker's are not, which
# saves a round trip per transaction (SQLAlchemy's pool_pre_ping tests every checkout).
IDLE_PING_S = 10.0


# The database is unreachable for now: retry later, never blame the page for it.
DATABASE_DOWN = (exc.OperationalError, exc.InterfaceError, exc.DisconnectionError)
# Any error the database raised (down, a constraint, a bad statement): a periodic thread that
# writes logs it and tries again at its next round.
DATABASE_ERROR = exc.SQLAlchemyError


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["configure_logger"] = False
    return config


def upgrade(url: str) -> None:
    """Bring the schema at `url` to the newest migration, under the database's migration lock
    (any number of processes may start on a fresh database at once)."""
    with migration_lock(url):
        command.upgrade(alembic_config(url), "head")


def _make_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args=connect_args(url))
    if is_sqlite(url):
        prepare_sqlite(engine)
    else:
        event.listen(engine, "checkin", _note_checkin)
        event.listen(engine, "checkout", functools.partial(_ping_if_idle, engine.dialect))
    return engine


def _note_checkin(_dbapi_connection: Any, record: Any) -> None:
    record.info["checked_in"] = time.monotonic()


def _ping_if_idle(dialect: Dialect, dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    # SQLAlchemy's "pessimistic disconnect handling" recipe, for idle connections only:
    # DisconnectionError makes the pool drop this connection and hand out a fresh one.
    idle_since = record.info.get("checked_in")
    if idle_since is None or time.monotonic() - idle_since < IDLE_PING_S:
        return
    try:
        dialect.do_ping(dbapi_connection)
    except Exception as error:  # whatever the driver raises for a dead connection
        raise exc.DisconnectionError(f"stale pooled connection: {error}") from error


def get_engine(url: str) -> Engine:
    """One migrated engine per URL per process."""
    with _lock:
        if url not in _engines:
            if (path := sqlite_file(url)) is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
            upgrade(url)
            _engines[url] = _make_engine(url)
        return _engines[url]


def dispose_engines() -> None:
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


class Database:
    """Sessions on one database; each `session()` block commits or rolls back as a unit."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = get_engine(url)
        self._factory = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self._factory() as session, session.begin():
            yield session

    def ping(self) -> None:
        """Raise unless the database answers a query."""
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A Core connection in one transaction (commits at the end, rolls back on error):
        the page path's statements without the ORM's unit of work."""
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def autocommit(self) -> Iterator[Connection]:
        """A connection where each statement commits alone: one round trip, no BEGIN/COMMIT."""
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            yield conn
