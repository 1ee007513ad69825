"""The worker-side Celery app: `make_celery` from `app.distributed.queue`, plus Folio's tasks.

`celery -A workers.app:create_app worker ...` works too; `folio worker` runs exactly that.
"""

from __future__ import annotations

from celery import Celery
from celery.signals import celeryd_after_setup, worker_process_shutdown, worker_shutdown
from celery.worker import WorkController

from app.distributed.queue import Enqueuer, make_celery
from app.settings import Settings
from workers.metrics import serve_worker_metrics
from workers.runtime import RuntimeHolder
from workers.tasks import register_tasks


def create_app(settings: Settings | None = None) -> Celery:
    """A Celery app with Folio's tasks registered, configured from `settings` (env when None)."""
    settings = settings or Settings()
    app = make_celery(settings)
    holder = RuntimeHolder(settings, Enqueuer(settings, app))
    register_tasks(app, holder)

    def _serve_metrics(instance: WorkController, **_: object) -> None:
        # After logging is set up and the pool chosen, before the first task is taken.
        if instance.app is app:
            holder.metrics = serve_worker_metrics(settings, instance.pool_cls)

    def _close(**_: object) -> None:
        holder.close()

    celeryd_after_setup.connect(_serve_metrics, weak=False)
    worker_shutdown.connect(_close, weak=False)
    worker_process_shutdown.connect(_close, weak=False)
    return app
