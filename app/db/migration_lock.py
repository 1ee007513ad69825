"""One migration at a time per database, whatever number of processes start at once (an API
server and its workers on a fresh database): each takes the lock, then finds the schema at
head or brings it there. Without it two processes each create the first table and one fails
(`UniqueViolation` on PostgreSQL's catalog, `table already exists` on SQLite).

- PostgreSQL: a session-level advisory lock (`pg_advisory_lock`) held on a connection of its
  own while the migrations run on theirs; it goes with that connection if the process dies.
- SQLite: an exclusive `flock` on a file beside the database (`<file>.migrate.lock`); the
  kernel drops it with the process. An in-memory database belongs to one process alone.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, pool, text

from app.db.dialect import is_sqlite, sqlite_file

# The advisory lock's key: any fixed 64-bit number no other code on the server uses
# (`folio` in ASCII).
ADVISORY_KEY = 0x666F6C696F


@contextmanager
def migration_lock(url: str) -> Iterator[None]:
    """Hold the database's migration lock for the block (waiting for it as long as it takes)."""
    if is_sqlite(url):
        with _file_lock(url):
            yield
        return
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": ADVISORY_KEY})
            conn.commit()  # the lock is the session's: it outlives this transaction
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": ADVISORY_KEY})
                conn.commit()
    finally:
        engine.dispose()


@contextmanager
def _file_lock(url: str) -> Iterator[None]:
    path = sqlite_file(url)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".migrate.lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
