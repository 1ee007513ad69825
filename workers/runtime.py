"""What one worker process keeps between tasks: settings, database, engines, enqueuer.

Built on the first task, not at import, so importing `workers` connects to nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from app.db.engine import Database
from app.distributed import FinalizeSweeper
from app.distributed.lost_tasks import LostTaskSweeper
from app.distributed.queue import Enqueuer
from app.distributed.queue_view import QueueView
from app.engines.registry import EngineSet
from app.jobs import worker_id
from app.pipeline.process_page import PageProcessor
from app.report.metrics import FolioMetrics
from app.servermetrics.sampler import ServerSampler, sampler_from_settings
from app.settings import Settings
from app.webhooks.dispatcher import WebhookDispatcher
from app.webhooks.options import WebhookOptions
from workers.metrics import FinishedJobTokens


@dataclass
class WorkerRuntime:
    settings: Settings
    db: Database
    engines: EngineSet
    processor: PageProcessor
    enqueuer: Enqueuer
    sweeper: FinalizeSweeper
    lost: LostTaskSweeper | None
    webhooks: WebhookDispatcher
    job_tokens: FinishedJobTokens | None  # with metrics and a server to read


class RuntimeHolder:
    """Creates the runtime once per process, thread-safely; `close()` releases the engines.

    `metrics`, set when the worker starts (workers/metrics.py), go to the page processor.
    """

    def __init__(self, settings: Settings, enqueuer: Enqueuer) -> None:
        self.settings = settings
        self.enqueuer = enqueuer
        self.metrics: FolioMetrics | None = None
        self._runtime: WorkerRuntime | None = None
        self._lock = threading.Lock()

    def get(self) -> WorkerRuntime:
        with self._lock:
            if self._runtime is None:
                # Database() migrates and connects; when it fails the task retries and so do we.
                db = Database(self.settings.database_url)
                engines = EngineSet(self.settings)
                sampler = sampler_from_settings(self.settings, db, worker_id())
                processor = PageProcessor(
                    self.settings,
                    db,
                    engines,
                    owner=worker_id(),
                    metrics=self.metrics,
                    sampler=sampler,
                )
                sweeper = FinalizeSweeper(db, self.enqueuer)
                lost = self._lost_task_sweeper(db)
                webhooks = WebhookDispatcher(WebhookOptions.from_settings(self.settings), db)
                webhooks.start()  # any worker sends the outbox's due webhooks
                self._runtime = WorkerRuntime(
                    self.settings,
                    db,
                    engines,
                    processor,
                    self.enqueuer,
                    sweeper,
                    lost,
                    webhooks,
                    self._job_tokens(db, sampler),
                )
            return self._runtime

    def _lost_task_sweeper(self, db: Database) -> LostTaskSweeper | None:
        interval = self.settings.lost_task_check_s
        if not interval:
            return None
        lost = LostTaskSweeper(db, self.enqueuer, QueueView(self.settings), interval)
        lost.start()
        return lost

    def _job_tokens(self, db: Database, sampler: ServerSampler | None) -> FinishedJobTokens | None:
        if self.metrics is None or sampler is None:
            return None
        return FinishedJobTokens(self.metrics, db, QueueView(self.settings))

    def close(self) -> None:
        with self._lock:
            if self._runtime is not None:
                self._runtime.processor.close()
                self._runtime.sweeper.close()
                if self._runtime.lost is not None:
                    self._runtime.lost.close()
                self._runtime.engines.close()
                self._runtime.webhooks.close()
                if self._runtime.job_tokens is not None:
                    self._runtime.job_tokens.close()
                self._runtime = None
