"""The queue seam: a Celery client configured from settings, and the messages Folio sends.

`app/` sends tasks by name only; their code lives in `workers/`, which registers them on an app
built by the same `make_celery` so client and workers always agree on queues and transport.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Literal

from celery import Celery
from kombu.exceptions import OperationalError as KombuOperationalError

from app.errors import FolioError
from app.settings import Settings

QueueKind = Literal["cpu", "gpu"]
SPLIT_DOCUMENT = "folio.split_document"
PROCESS_PAGE = "folio.process_page"
PROCESS_PAGES = "folio.process_pages"  # several pages of the CPU queue in one task
FINALIZE_JOB = "folio.finalize_job"


class BrokerUnavailable(FolioError):
    """The Celery broker (Redis) cannot be reached."""

    category = "broker"


def queue_name(settings: Settings, kind: QueueKind) -> str:
    return f"{settings.queue_prefix}.{kind}"


def make_celery(settings: Settings) -> Celery:
    """A Celery app for the configured broker; the database, not Celery, keeps task state."""
    if not settings.broker_url:
        raise BrokerUnavailable("distributed mode needs a broker: set FOLIO_BROKER_URL")
    app = Celery("folio", broker=settings.broker_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_default_queue=queue_name(settings, "cpu"),
        task_routes={
            SPLIT_DOCUMENT: {"queue": queue_name(settings, "cpu")},
            FINALIZE_JOB: {"queue": queue_name(settings, "cpu")},
        },
        broker_transport_options={
            "visibility_timeout": settings.visibility_timeout_s,
            "global_keyprefix": f"{settings.queue_prefix}:",
            # Look for tasks of dead workers a few times per visibility timeout, not every 100 s.
            "unacked_restore_interval": max(1, min(60, int(settings.visibility_timeout_s / 4))),
            "unacked_restore_throttle": 1,
            # A worker killed while holding the restore lock must not block restores for 5 min.
            "unacked_mutex_expire": max(1, min(300, int(settings.visibility_timeout_s))),
            # One Redis list per priority level (`<queue>:<level>`), drained 0 (first) to 9.
            "priority_steps": list(range(10)),
            "sep": ":",
            "queue_order_strategy": "priority",
        },
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=5,
        worker_send_task_events=False,
    )
    return app


def check_broker(app: Celery) -> None:
    """Raise BrokerUnavailable unless the broker answers now."""
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=5)
    except (KombuOperationalError, OSError) as exc:
        raise BrokerUnavailable(f"cannot reach the broker {app.conf.broker_url}: {exc}") from exc


def page_queue(settings: Settings, plan_name: str) -> str:
    """Pages whose plan calls a VLM go to GPU workers; the rest to CPU workers."""
    uses_vlm = any(step.engine == "vlm" for step in settings.plan(plan_name))
    return queue_name(settings, "gpu" if uses_vlm else "cpu")


# A document's pages spread over at least this many tasks, so a short document still runs on
# as many threads as a worker pair has (2 x 4) when pages are grouped.
MIN_TASKS_PER_BATCH = 8


def page_groups(page_ids: Sequence[int], most: int) -> list[list[int]]:
    """`page_ids` in consecutive groups of at most `most`, as even as can be, and at least
    MIN_TASKS_PER_BATCH groups while there are that many pages."""
    if not page_ids:
        return []
    count = max(math.ceil(len(page_ids) / most), min(len(page_ids), MIN_TASKS_PER_BATCH))
    size, larger = divmod(len(page_ids), count)  # the first `larger` groups take one more
    bounds = [i * size + min(i, larger) for i in range(count + 1)]
    return [list(page_ids[a:b]) for a, b in itertools.pairwise(bounds)]


def broker_priority(priority: int) -> int:
    """Folio's job priority (0-9, higher first) as the Redis transport's level (0 first)."""
    return 9 - max(0, min(9, priority))


class Enqueuer:
    """Sends Folio's tasks; call only after the rows they name are committed."""

    def __init__(self, settings: Settings, app: Celery | None = None) -> None:
        self.settings = settings
        self.app = app or make_celery(settings)

    def split_documents(self, document_ids: Iterable[int], priority: int = 0) -> int:
        return self._send(SPLIT_DOCUMENT, document_ids, queue_name(self.settings, "cpu"), priority)

    def process_pages(self, page_ids: Iterable[int], plan_name: str, priority: int = 0) -> int:
        """Queue the pages' tasks: one page each on the GPU queue, groups on the CPU queue
        (`pages_per_task`). Returns the number of pages queued."""
        queue = page_queue(self.settings, plan_name)
        most = self.settings.pages_per_task
        if queue == queue_name(self.settings, "gpu") or most == 1:
            return self._send(PROCESS_PAGE, page_ids, queue, priority)
        groups = page_groups(list(page_ids), most)
        self._send(PROCESS_PAGES, groups, queue, priority)
        return sum(len(group) for group in groups)

    def finalize_job(self, job_id: str) -> None:
        # Cheap and the job's last step: ahead of every page task.
        self._publish(FINALIZE_JOB, job_id, queue_name(self.settings, "cpu"))

    def _send(self, task: str, ids: Iterable[int | list[int]], queue: str, priority: int) -> int:
        sent = 0
        level = broker_priority(priority)
        try:
            with self.app.producer_or_acquire() as producer:
                for item in ids:
                    self.app.send_task(
                        task, args=[item], queue=queue, producer=producer, priority=level
                    )
                    sent += 1
        except KombuOperationalError as exc:
            raise BrokerUnavailable(f"cannot reach the broker after {sent} tasks: {exc}") from exc
        return sent

    def _publish(self, task: str, arg: str | int, queue: str) -> None:
        try:
            self.app.send_task(task, args=[arg], queue=queue, priority=0)
        except KombuOperationalError as exc:
            raise BrokerUnavailable(f"cannot reach the broker: {exc}") from exc
