"""A worker's Prometheus endpoint: Folio's counters for the pages this worker process runs.

`folio serve` mounts its metrics in the API; a Celery worker has no HTTP server of its own, so
it serves them with prometheus_client's on `worker_metrics_port`. One endpoint sees every page
only when the tasks run in the worker's own process: the threads pool, which `folio worker`
uses (a GPU worker keeps hundreds of VLM requests in flight in one process), or solo, gevent,
eventlet. A prefork pool runs them in child processes whose counters the parent never sees;
prometheus_client's multiprocess mode would mend that with a shared folder of memory-mapped
files set up before any import, for a pool Folio keeps only for CPU-heavy Tesseract runs, so
such a worker exports nothing and says so.
"""

from __future__ import annotations

import logging

from celery.concurrency.prefork import TaskPool as PreforkPool
from redis import RedisError

from app.db.engine import Database
from app.distributed import DATABASE_DOWN
from app.distributed.queue_view import QueueView
from app.report.build import job_server_tokens
from app.report.metrics import FolioMetrics, make_metrics, start_metrics_server
from app.settings import Settings

log = logging.getLogger(__name__)

ALL_INTERFACES = "0.0.0.0"  # scraped from another pod or machine, as exporters are
CLAIM_S = 7 * 86400.0  # how long a job's count is remembered: far past its last finalize


def runs_tasks_in_process(pool_cls: type) -> bool:
    """Whether a Celery pool runs tasks in the worker's own process (threads, solo, greenlets)."""
    return not issubclass(pool_cls, PreforkPool)


def serve_worker_metrics(settings: Settings, pool_cls: type) -> FolioMetrics | None:
    """Start the worker's metrics endpoint; the metrics to hand to its page processor, or None
    when there is none (port 0, a prefork pool, the port taken: the worker runs on without)."""
    port = settings.worker_metrics_port
    if not port:
        return None
    if not runs_tasks_in_process(pool_cls):
        log.warning(
            "No Folio metrics on port %s: the %s pool runs pages in child processes; use "
            "--pool threads, or set FOLIO_WORKER_METRICS_PORT=0 to silence this",
            port,
            pool_cls.__module__,
        )
        return None
    metrics = make_metrics(settings)
    try:
        start_metrics_server(metrics, port, addr=ALL_INTERFACES)
    except OSError as exc:
        # Several workers on one machine (one per GPU, say) share the default: the first one
        # serves, the others keep working and say how to give each its port.
        log.warning(
            "No Folio metrics: port %s is not free (%s); give each worker on this machine its "
            "own FOLIO_WORKER_METRICS_PORT",
            port,
            exc,
        )
        return None
    log.info("Folio metrics at http://%s:%s/metrics", ALL_INTERFACES, port)
    return metrics


class FinishedJobTokens:
    """Adds a finished job's server-side token figures (`folio_server_tokens_total`) to this
    worker's metrics, once per job across all workers: a job may be finalized twice (a retry,
    or two workers' sweeps when its last pages closed together), and only the first to claim
    the job in Redis counts it. `folio run` and `folio serve` count theirs as a job ends."""

    def __init__(self, metrics: FolioMetrics, db: Database, view: QueueView) -> None:
        self.metrics = metrics
        self.db = db
        self.view = view

    def count(self, job_id: str) -> None:
        try:
            figures = job_server_tokens(self.db, job_id)
            if self.view.lead(f"server-tokens:{job_id}", CLAIM_S):
                self.metrics.observe_server_tokens(figures)
        except (RedisError, *DATABASE_DOWN) as exc:
            # The job is done and its results out; a metric is not worth a task retry.
            log.warning("Job %s's server tokens are not in the metrics: %s", job_id, exc)

    def close(self) -> None:
        self.view.close()
