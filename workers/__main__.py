"""`python -m workers SUBCOMMAND ...`: Celery's own command line over Folio's app, as
`celery -A workers.app:create_app SUBCOMMAND ...` is. `worker -Q ...` runs a worker (`folio
worker` execs exactly that); `inspect ping -d NODE` is the containers' healthcheck, and exits
as Celery's does: 0 when the node answered, 69 (EX_UNAVAILABLE) when none did."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from celery.bin.celery import celery

from workers.app import create_app


def main(argv: Sequence[str] | None = None) -> None:
    """Click's standalone mode ends the process with Celery's exit codes (`Celery.start` would
    hand a failed `inspect` back as a traceback instead)."""
    app_option = celery.params[0]  # `-A/--app`: Celery.start gives its app the same way
    app_option.default = create_app()
    try:
        celery.main(
            args=list(sys.argv[1:] if argv is None else argv),
            prog_name="python -m workers",
            auto_envvar_prefix="CELERY",
        )
    finally:
        app_option.default = None


if __name__ == "__main__":
    main()
