"""The FastAPI application factory: settings in, app out, nothing done at import time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI

from app.api.body_limit import BodyLimit
from app.api.console import install_console
from app.api.context import ApiContext
from app.api.problems import install_problem_handlers
from app.api.routes import metrics_router, router
from app.api.runner import JobRunner, make_runner
from app.db.engine import Database
from app.jobs.retention import RetentionTimer
from app.report.metrics import make_metrics
from app.settings import Settings
from app.webhooks.dispatcher import WebhookDispatcher
from app.webhooks.options import WebhookOptions


def create_app(settings: Settings, runner: JobRunner | None = None) -> FastAPI:
    """The API on `settings.database_url`; jobs go to `runner` (from the settings when None)."""
    db = Database(settings.database_url)
    metrics = make_metrics(settings)
    ctx = ApiContext(settings, db, runner or make_runner(settings, db, metrics), metrics)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        retention = None
        if settings.retention_days:
            retention = RetentionTimer(db, Path(settings.upload_dir), settings.retention_days)
            retention.start()
        webhooks = WebhookDispatcher(WebhookOptions.from_settings(settings), db)
        webhooks.start()
        yield
        ctx.runner.close()
        webhooks.close()
        if retention:
            retention.stop()

    app = FastAPI(
        title="Folio",
        summary="Batch OCR for PDFs that catches text degeneration.",
        version="1",
        lifespan=lifespan,
    )
    app.state.folio = ctx
    install_problem_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=int(settings.api_max_upload_mb * 2**20))
    app.include_router(router)
    app.include_router(metrics_router)
    install_console(app)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        """Liveness and database reachability; needs no key."""
        db.ping()
        return {"status": "ok"}

    return app
