"""Prometheus metrics for running systems: pages, attempts, degeneration, tokens, cost, time.

Each process makes its own `FolioMetrics` (with its own registry) and hands it to the page
pipeline; workers expose it with `start_metrics_server`, the API mounts `make_asgi_app`.
Cost here is what one attempt's prices give (tokens, CPU time). GPU-hour prices depend on the
whole timeline and are attributed by `folio report`; `folio_attempt_duration_seconds` per
endpoint lets a dashboard price GPU time too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client import make_asgi_app as _prometheus_asgi_app

from app.domain import AttemptStatus, EngineResult, PageStatus
from app.report.cost import direct_cost
from app.report.pricing import Pricing, pricing_from_settings
from app.report.schema import ServerTokens
from app.settings import Settings

DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 600)


class FolioMetrics:
    """Folio's collectors on one registry; `observe_*` are called by the page pipeline."""

    def __init__(self, pricing: Pricing | None = None, registry: CollectorRegistry | None = None):
        self.pricing = pricing or Pricing()
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.pages = Counter(
            "folio_pages", "Pages finished, by terminal status.", ["status"], registry=r
        )
        self.attempts = Counter(
            "folio_attempts", "Engine calls by outcome.", ["outcome", "engine", "model"], registry=r
        )
        self.degenerate = Counter(
            "folio_degenerate_attempts", "Degenerate engine calls.", ["engine", "model"], registry=r
        )
        self.false_alarms = Counter(
            "folio_false_alarms",
            "Loop verdicts a confirming attempt proved wrong, counted as its page keeps the "
            "answer (their attempts were counted degenerate, and saved tokens, when they ended).",
            ["model"],
            registry=r,
        )
        self.tokens = Counter(
            "folio_tokens",
            "Tokens by kind: prompt, generated, degenerate, saved (not generated thanks to abort).",
            ["kind", "model"],
            registry=r,
        )
        self.cost = Counter(
            "folio_cost_usd", "Cost from token and CPU prices.", ["basis", "model"], registry=r
        )
        self.server_tokens = Counter(
            "folio_server_tokens",
            "Tokens endpoint servers generated for finished jobs, from their own counters "
            "(vLLM /metrics): generated, unreceived (received by no attempt), lost_aborts "
            "(of which aborted requests ran on), degenerate (lost aborts plus degenerate "
            "attempts' tokens). Each job counts its share once, when it finishes.",
            ["kind", "endpoint"],
            registry=r,
        )
        self.duration = Histogram(
            "folio_attempt_duration_seconds",
            "Engine call duration.",
            ["engine", "endpoint", "outcome"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )

    def observe_attempt(self, engine: str, result: EngineResult) -> None:
        model, outcome = result.model or "none", str(result.status)
        self.attempts.labels(outcome, engine, model).inc()
        self.duration.labels(engine, result.endpoint or engine, outcome).observe(result.duration_s)
        generated = result.completion_tokens or 0
        self.tokens.labels("prompt", model).inc(result.prompt_tokens or 0)
        self.tokens.labels("generated", model).inc(generated)
        if result.status is AttemptStatus.DEGENERATE:
            self.degenerate.labels(engine, model).inc()
            self.tokens.labels("degenerate", model).inc(generated)
        if result.aborted and result.max_tokens is not None:
            self.tokens.labels("saved", model).inc(max(0, result.max_tokens - generated))
        tokens, cpu, _ = direct_cost(
            self.pricing,
            engine,
            result.endpoint,
            result.duration_s,
            result.prompt_tokens,
            result.completion_tokens,
        )
        self.cost.labels("tokens", model).inc(tokens)
        self.cost.labels("cpu", model).inc(cpu)

    def expect_models(self, models: Sequence[str]) -> None:
        """Series at zero for each configured VLM model, before its first attempt: a counter
        that first appears already at its count (a job finished between two scrapes) shows
        Prometheus no increase, and `rate()` reads 0 loops on a model that looped."""
        for model in models:
            for status in AttemptStatus:
                self.attempts.labels(str(status), "vlm", model)
            self.degenerate.labels("vlm", model)
            self.false_alarms.labels(model)
            for kind in ("prompt", "generated", "degenerate", "saved"):
                self.tokens.labels(kind, model)

    def observe_false_alarms(self, model: str | None, verdicts: int) -> None:
        self.false_alarms.labels(model or "none").inc(verdicts)

    def observe_server_tokens(self, servers: Sequence[ServerTokens]) -> None:
        """A finished job's server-side figures (endpoints without readings are skipped)."""
        for s in servers:
            if s.tokens_generated is None:
                continue
            self.server_tokens.labels("generated", s.endpoint).inc(s.tokens_generated)
            self.server_tokens.labels("unreceived", s.endpoint).inc(s.tokens_unreceived or 0)
            self.server_tokens.labels("lost_aborts", s.endpoint).inc(s.tokens_lost_aborts or 0)
            degenerate = (s.degenerate_share or 0) * s.tokens_generated
            self.server_tokens.labels("degenerate", s.endpoint).inc(degenerate)

    def observe_page(self, status: PageStatus) -> None:
        self.pages.labels(str(status)).inc()


def make_metrics(settings: Settings | None = None) -> FolioMetrics:
    """A fresh set of collectors on its own registry, priced from `settings`, with the
    series of its endpoints' models at zero."""
    metrics = FolioMetrics(pricing_from_settings(settings) if settings else None)
    if settings is not None:
        metrics.expect_models(sorted({e.model for e in settings.vlm_endpoints.values()}))
    return metrics


def start_metrics_server(
    metrics: FolioMetrics, port: int, addr: str = "127.0.0.1"
) -> tuple[WSGIServer, threading.Thread]:
    """Serve /metrics on a daemon thread (port 0 picks a free one: `server.server_port`)."""
    return start_http_server(port, addr=addr, registry=metrics.registry)


def make_asgi_app(metrics: FolioMetrics) -> Callable[..., Any]:
    """An ASGI app serving the metrics, for the API to mount at /metrics."""
    return _prometheus_asgi_app(registry=metrics.registry)
