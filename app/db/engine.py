"""The database seam: engines and sessions from a URL, migrated before first use."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

import migrations

_lock = threading.Lock()
_engines: dict[str, Engine] = {}


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["configure_logger"] = False
    return config


def upgrade(url: str) -> None:
    """Bring the schema at `url` to the newest migration."""
    command.upgrade(alembic_config(url), "head")


def _make_engine(url: str) -> Engine:
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    engine = create_engine(url, **kwargs)
    if url.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets the progress display read while worker threads write.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def get_engine(url: str) -> Engine:
    """One migrated engine per URL per process."""
    with _lock:
        if url not in _engines:
            if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
                Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
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
