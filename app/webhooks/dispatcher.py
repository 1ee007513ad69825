"""Sends the outbox's due deliveries: any process may run one (the API server and each worker
do); the database decides which sends which, so a restart or a second sender loses nothing.

Sends run on a bounded pool, at most `per_receiver` to one receiver (`lanes.py`), each under
one total deadline (`app/outbound/calls.py`): a receiver that drips its reply holds its own
lanes until the deadline, and every other receiver's deliveries go on meanwhile."""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from app.db import webhooks as rows
from app.db.engine import DATABASE_DOWN, Database
from app.outbound.calls import Call, CallFailed, call_blocking
from app.pipeline.periodic import PeriodicThread
from app.webhooks import outbox
from app.webhooks.lanes import Lanes
from app.webhooks.options import WebhookOptions
from app.webhooks.signing import HEADER, sign
from app.webhooks.urls import UrlRefused

log = logging.getLogger(__name__)
# Due deliveries looked at per round, beyond the free lanes: room to pass over the ones whose
# receivers are busy and reach the others.
LOOK_AHEAD = 50


class WebhookDispatcher:
    def __init__(self, options: WebhookOptions, db: Database) -> None:
        self.options = options
        self.db = db
        self.lanes = Lanes(options.concurrency, options.per_receiver)
        self._pool = ThreadPoolExecutor(options.concurrency, thread_name_prefix="folio-webhook")
        self._thread = PeriodicThread(self._run_logged, options.poll_s, "folio-webhooks")

    def start(self) -> None:
        self._thread.ensure_started()

    def close(self) -> None:
        self._thread.stop()
        # A send in flight ends by its deadline; one not started keeps its claim, which lapses.
        self._pool.shutdown(wait=False, cancel_futures=True)

    def run_once(self) -> int:
        """Make the rows of new events, then start the due sends the lanes have room for;
        sends started (they go on after this returns)."""
        now = datetime.now(UTC)
        with self.db.session() as session:
            outbox.schedule(session, now, self.options.give_up)
        free = self.lanes.free()
        if free <= 0:
            return 0
        with self.db.session() as session:
            due = rows.due(session, now, free + LOOK_AHEAD, self.lanes.full_urls())
        started = 0
        for delivery_id, url in due:
            if started == free or not self.lanes.take(url):
                continue
            with self.db.session() as session:
                claimed = rows.claim(
                    session, delivery_id, datetime.now(UTC), self.options.claim_for
                )
            if not claimed:
                self.lanes.give_back(url)
                continue
            self._pool.submit(self._deliver_in_lane, delivery_id, url)
            started += 1
        return started

    def _deliver_in_lane(self, delivery_id: int, url: str) -> None:
        try:
            self.deliver(delivery_id)
        except DATABASE_DOWN as exc:  # the claim lapses and another round sends it again
            log.warning("webhook delivery %s not recorded, will retry: %s", delivery_id, exc)
        except Exception:
            log.exception("webhook delivery %s failed unexpectedly", delivery_id)
        finally:
            self.lanes.give_back(url)

    def deliver(self, delivery_id: int) -> outbox.SendResult:
        """One signed POST of the delivery, its attempt recorded."""
        with self.db.session() as session:
            out = rows.outgoing(session, delivery_id, datetime.now(UTC))
        body = json.dumps(out.payload, separators=(",", ":")).encode()
        result = self._post(out.url, body, out.secrets, out.event, out.event_id)
        with self.db.session() as session:
            outbox.record(session, delivery_id, result, self.options)
        return result

    def _post(
        self, url: str, body: bytes, secrets: tuple[str, ...], kind: str, event_id: str
    ) -> outbox.SendResult:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "folio-webhooks/1",
            "Folio-Event-Id": event_id,
            "Folio-Event-Type": kind,
            HEADER: sign(secrets or ("",), body),
        }
        request = Call("POST", url, body, headers, self.options.allow_private, "callback URL")
        started = time.perf_counter()
        try:
            reply = call_blocking(request, self.options.timeout_s)
            return outbox.SendResult(reply.status_code, time.perf_counter() - started, None)
        except (CallFailed, UrlRefused) as exc:
            error = f"{type(exc).__name__}: {exc}"
            return outbox.SendResult(None, time.perf_counter() - started, error)

    def _run_logged(self) -> None:
        try:
            self.run_once()
        except DATABASE_DOWN as exc:
            log.warning("webhook dispatch failed, will retry: %s", exc)
        except Exception:
            # The thread's edge: the outbox rows stay pending and the next round retries them.
            log.exception("webhook dispatch failed unexpectedly")
