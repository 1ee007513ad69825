"""Sends the outbox's due deliveries: any process may run one (the API server and each worker
do); the database decides which sends which, so a restart or a second sender loses nothing."""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime

import httpx

from app.db import webhooks as rows
from app.db.engine import DATABASE_DOWN, Database
from app.pipeline.periodic import PeriodicThread
from app.webhooks import outbox
from app.webhooks.options import WebhookOptions
from app.webhooks.signing import HEADER, sign
from app.webhooks.urls import UrlRefused, check_url

log = logging.getLogger(__name__)
BATCH = 20


class WebhookDispatcher:
    def __init__(self, options: WebhookOptions, db: Database) -> None:
        self.options = options
        self.db = db
        self.client = httpx.Client(timeout=options.timeout_s, follow_redirects=False)
        self._thread = PeriodicThread(self._run_logged, options.poll_s, "folio-webhooks")

    def start(self) -> None:
        self._thread.ensure_started()

    def close(self) -> None:
        self._thread.stop()
        self.client.close()

    def run_once(self) -> int:
        """Make the rows of new events, then send the due ones; deliveries attempted."""
        now = datetime.now(UTC)
        with self.db.session() as session:
            outbox.schedule(session, now, self.options.give_up)
        with self.db.session() as session:
            ids = rows.due(session, now, BATCH)
        sent = 0
        for delivery_id in ids:
            with self.db.session() as session:
                if not rows.claim(session, delivery_id, datetime.now(UTC), self.options.claim_for):
                    continue
            self.deliver(delivery_id)
            sent += 1
        return sent

    def deliver(self, delivery_id: int) -> outbox.SendResult:
        """One signed POST of the delivery, its attempt recorded."""
        with self.db.session() as session:
            out = rows.outgoing(session, delivery_id)
        body = json.dumps(out.payload, separators=(",", ":")).encode()
        result = self._post(out.url, body, out.secret or "", out.event, out.event_id)
        with self.db.session() as session:
            outbox.record(session, delivery_id, result, self.options)
        return result

    def _post(
        self, url: str, body: bytes, secret: str, kind: str, event_id: str
    ) -> outbox.SendResult:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "folio-webhooks/1",
            "Folio-Event-Id": event_id,
            "Folio-Event-Type": kind,
            HEADER: sign(secret, body),
        }
        started = time.perf_counter()
        try:
            check_url(url, self.options.allow_private)
            response = self.client.post(url, content=body, headers=headers)
            return outbox.SendResult(response.status_code, time.perf_counter() - started, None)
        except (httpx.HTTPError, UrlRefused) as exc:
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
