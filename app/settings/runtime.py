"""The distributed runtime: queues, page leases, lost tasks, workers, retries while the
database is down, and the polling behind waits, events and cancels."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RuntimeFields(BaseModel):
    """Celery queues, leases, workers and their retries and polling."""

    queue_prefix: str = Field(
        default="folio",
        description="Prefix of the Celery queue names and Redis keys; distinct prefixes let "
        "several Folio installations share one Redis.",
    )
    visibility_timeout_s: float = Field(
        default=3600.0,
        description="Seconds before Redis redelivers a task whose worker died; longer than "
        "the slowest page.",
    )
    page_lease_s: float = Field(
        default=60.0,
        gt=0,
        description="Seconds a page's lease lasts; its worker renews it every third of that "
        "while the page runs, so a page may run longer, and another worker takes it only one "
        "lease after its holder's last renewal (the holder died).",
    )
    lost_task_check_s: float = Field(
        default=30.0,
        ge=0,
        description="Seconds between a worker's checks for page tasks the broker lost with a "
        "killed worker (queued again once seen lost twice while the queues are drained); "
        "0 turns the checks off.",
    )
    pages_per_task: int = Field(
        default=8,
        ge=1,
        description="Most pages one Celery task carries on the CPU queue (text layer, "
        "Tesseract): claimed in one statement and closed in one transaction, so the broker's "
        "and the database's cost per task is shared. A document's pages still spread over at "
        "least 8 tasks. VLM pages go one per task (each runs for seconds; their threads, "
        "not the queue, set the batch the server sees).",
    )
    worker_threads: int = Field(
        default=32,
        description="Pages one `folio worker` process runs at once when --concurrency is unset.",
    )
    worker_metrics_port: int = Field(
        default=9464,
        ge=0,
        le=65535,
        description="Port on which a `folio worker` serves Folio's Prometheus metrics of the "
        "pages it runs (`/metrics` on every interface, no key); 0 turns it off. Only with the "
        "threads pool (the default): a prefork pool's pages run in child processes. Workers "
        "sharing a machine need a port each; one whose port is taken runs without metrics.",
    )
    db_retry_limit: int = Field(
        default=20,
        description="Times a task retries when the database or the object store is unreachable "
        "before giving up (the page stays open for `folio recover`).",
    )
    db_retry_max_delay_s: float = Field(
        default=30.0,
        description="Longest wait between a task's retries while the database or the store "
        "is down.",
    )

    events_poll_s: float = Field(
        default=0.5,
        gt=0,
        description="Seconds between the database reads behind `?wait=` and the event stream.",
    )
    cancel_check_s: float = Field(
        default=0.5,
        gt=0,
        description="Seconds between a worker's checks for cancelled jobs among the pages it "
        "runs (their VLM requests are stopped at the next streamed chunk).",
    )
