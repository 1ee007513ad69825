"""`python -m workers worker -Q ...`: a Celery worker with Folio's tasks; `folio worker` runs it."""

from __future__ import annotations

import sys

from workers.app import create_app


def main() -> None:
    create_app().worker_main(sys.argv[1:])


if __name__ == "__main__":
    main()
