"""A `folio worker` that counts its database round trips, for `bench.orchestration.benchmark`.

Run by path, with PYTHONPATH naming the source tree to measure (this one, or an older commit's
exported by the bench), so both arms are counted by the same code:

    python bench/orchestration/count_worker.py COUNTS_FILE worker -Q ... -P threads -c 4

Counted with SQLAlchemy events: statements (`before_cursor_execute`), BEGINs the driver sends
(`begin` on a connection not in autocommit), COMMITs (`commit`) and pool pings (`do_ping`,
which SQLAlchemy sends outside the statement events); statements also by kind (`stmt:` the verb
and the first table named, so two trees' traffic can be told apart). Written to COUNTS_FILE
every 0.2 s.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.dialects.postgresql._psycopg_common import _PGDialect_common_psycopg
from sqlalchemy.engine import Engine

COUNTS: Counter[str] = Counter()
_LOCK = threading.Lock()


def _count(kind: str) -> None:
    with _LOCK:
        COUNTS[kind] += 1


def install() -> None:
    @event.listens_for(Engine, "before_cursor_execute")
    def _statement(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        _count("statements")
        _count(f"stmt:{statement_kind(statement)}")

    @event.listens_for(Engine, "begin")
    def _begin(conn: Any) -> None:
        if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            _count("begins")

    @event.listens_for(Engine, "commit")
    def _commit(_conn: Any) -> None:
        _count("commits")

    ping = _PGDialect_common_psycopg.do_ping

    def counted_ping(self: Any, dbapi_connection: Any) -> bool:
        _count("pings")
        return bool(ping(self, dbapi_connection))

    _PGDialect_common_psycopg.do_ping = counted_ping  # type: ignore[method-assign]


_KIND = re.compile(r"\s*(\w+)(?:.*?\b(?:FROM|INTO|UPDATE)\s+\"?(\w+))?", re.S | re.I)


def statement_kind(statement: str) -> str:
    """'SELECT jobs', 'UPDATE pages', 'INSERT attempts': the verb and the first table named."""
    found = _KIND.match(statement)
    if not found:
        return "other"
    verb = found.group(1).upper()
    table = found.group(2) if verb != "UPDATE" else statement.split()[1].strip('"')
    return f"{verb} {table or ''}".strip()


def write_periodically(path: Path, stop: threading.Event) -> None:
    while not stop.wait(0.2):
        with _LOCK:
            snapshot = dict(COUNTS)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(snapshot), encoding="utf-8")
        temporary.replace(path)


def main() -> None:
    counts_file = Path(sys.argv[1])
    install()
    threading.Thread(
        target=write_periodically, args=(counts_file, threading.Event()), daemon=True
    ).start()
    from workers.app import create_app  # from the tree PYTHONPATH names

    create_app().worker_main(sys.argv[2:])


if __name__ == "__main__":
    main()
