"""A read-only look into the Redis broker: are Folio's queues drained, which tasks are unacked.

Kombu's Redis transport takes a message off its list with BRPOP and records it as unacked
(the hash that `visibility_timeout` restores from) with a second command only after the worker
has read the reply. A worker killed between the two (the reply still in its socket buffer)
takes the message with it: it is in no list and in no unacked hash, and no timeout brings it
back (celery/celery#4354, #7950). `app.distributed.lost_tasks` uses this view to find such pages.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import redis

from app.distributed.queue import PROCESS_PAGE, PROCESS_PAGES, SPLIT_DOCUMENT, queue_name
from app.settings import Settings

log = logging.getLogger(__name__)
PRIORITY_LEVELS = range(10)  # as `make_celery` sets `priority_steps`


@dataclass(frozen=True)
class InFlight:
    """What the unacked hash holds: pages and documents whose tasks some worker has taken."""

    pages: set[int] = field(default_factory=set)
    documents: set[int] = field(default_factory=set)


class QueueView:
    """Folio's keys in one Redis (those under `queue_prefix`), read with plain commands."""

    def __init__(self, settings: Settings) -> None:
        if not settings.broker_url:
            raise ValueError("a queue view needs FOLIO_BROKER_URL")
        self.prefix = f"{settings.queue_prefix}:"
        self.client = redis.Redis.from_url(settings.broker_url, socket_timeout=10)
        queues = [queue_name(settings, kind) for kind in ("cpu", "gpu")]
        # Level 0 is the bare queue name; the others `<queue>:<level>` (kombu's `_q_for_pri`).
        self.lists = [
            self.prefix + (q if level == 0 else f"{q}:{level}")
            for q in queues
            for level in PRIORITY_LEVELS
        ]

    def queued(self) -> int:
        """Messages waiting in Folio's queues, every priority level."""
        pipe = self.client.pipeline(transaction=False)
        for key in self.lists:
            pipe.llen(key)
        return sum(int(n) for n in pipe.execute())

    def in_flight(self) -> InFlight:
        """Ids named by the tasks that workers hold unacked (running, reserved or waiting for
        an ETA, or left by a dead worker until `visibility_timeout` restores them)."""
        found = InFlight()
        for raw in self.client.hvals(self.prefix + "unacked"):
            task, ids = _task_and_ids(raw)
            if task in (PROCESS_PAGE, PROCESS_PAGES):
                found.pages.update(ids)
            elif task == SPLIT_DOCUMENT:
                found.documents.update(ids)
        return found

    def lead(self, name: str, seconds: float) -> bool:
        """True for one caller per `seconds` across every process sharing this Redis."""
        key = f"{self.prefix}folio:{name}:lead"
        return bool(self.client.set(key, "1", nx=True, px=max(1, int(seconds * 1000))))

    def remember(self, name: str, ids: set[int], seconds: float) -> set[int]:
        """Store `ids` under `name` for `seconds`; the ids stored there before."""
        key = f"{self.prefix}folio:{name}"
        pipe = self.client.pipeline(transaction=True)
        pipe.get(key)
        pipe.set(key, json.dumps(sorted(ids)), px=max(1, int(seconds * 1000)))
        before = pipe.execute()[0]
        return set(json.loads(before)) if before else set()

    def close(self) -> None:
        self.client.close()


def task_ids(message: dict[str, Any]) -> tuple[str, list[int]]:
    """The task name of one Celery message (protocol 2) and the ids its first argument names:
    one id, or a list of them (`folio.process_pages`)."""
    task = message["headers"]["task"]
    body = message["body"]
    if message.get("properties", {}).get("body_encoding") == "base64":
        body = base64.b64decode(body)
    first = json.loads(body)[0][0]  # [args, kwargs, embed]
    return task, [int(i) for i in first] if isinstance(first, list) else [int(first)]


def _task_and_ids(raw: bytes | str) -> tuple[str | None, list[int]]:
    """The task name and ids of one unacked entry (`[message, exchange, key]`)."""
    try:
        return task_ids(json.loads(raw)[0])
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        log.warning("an unacked message Folio cannot read: %s", exc)
        return None, []
