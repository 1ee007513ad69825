"""The worker-side Celery app: `make_celery` from `app.distributed.queue`, plus Folio's tasks.

`celery -A workers.app:create_app worker ...` works too; `folio worker` runs exactly that.
"""

from __future__ import annotations

from celery import Celery
from celery.signals import worker_process_shutdown, worker_shutdown

from app.distributed.queue import Enqueuer, make_celery
from app.settings import Settings
from workers.runtime import RuntimeHolder
from workers.tasks import register_tasks


def create_app(settings: Settings | None = None) -> Celery:
    """A Celery app with Folio's tasks registered, configured from `settings` (env when None)."""
    settings = settings or Settings()
    app = make_celery(settings)
    holder = RuntimeHolder(settings, Enqueuer(settings, app))
    register_tasks(app, holder)

    def _close(**_: object) -> None:
        holder.close()

    worker_shutdown.connect(_close, weak=False)
    worker_process_shutdown.connect(_close, weak=False)
    return app
