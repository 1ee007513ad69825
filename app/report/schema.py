"""The report document: one versioned JSON object per job (`schema_version` bumps on breaks)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class OutcomeFigures:
    """Totals over the attempts of one outcome (attempt status)."""

    attempts: int = 0
    tokens_prompt: int = 0
    tokens_generated: int = 0
    engine_seconds: float = 0.0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class ModelFigures:
    engine: str
    model: str | None
    endpoint: str | None
    attempts: int
    degenerate_attempts: int
    tokens_prompt: int
    tokens_generated: int
    engine_seconds: float
    cost_usd: float
    cost_usd_degenerate: float


@dataclass(frozen=True)
class SlowPage:
    document: str
    page: int
    status: str
    attempts: int
    engine_seconds: float
    final_step: str | None


@dataclass(frozen=True)
class DegenerateAttempt:
    document: str
    page: int
    attempt_id: int
    step: str
    model: str | None
    verdict_kind: str | None
    verdict_period: int | None
    tokens_generated: int | None
    aborted: bool
    tail: str


@dataclass(frozen=True)
class ServerTokens:
    """Tokens one endpoint's server generated for the job, from its own counters."""

    endpoint: str
    metrics_url: str | None
    tokens_generated: float | None
    tokens_received: int
    tokens_unreceived: float | None
    tokens_lost_aborts: float | None
    degenerate_share: float | None
    window_tokens: float | None
    other_jobs_tokens: float
    reason: str | None = None
    close_probe_tokens: float = 0.0  # generated for Folio's close-liveness probe, not a page


@dataclass(frozen=True)
class Report:
    job_id: str
    plan: str
    job_status: str
    documents_total: int
    documents_failed: int
    pages_total: int
    pages_succeeded: int
    pages_fallback: int
    pages_failed: int
    pages_open: int
    attempts_total: int
    degenerate_attempts: int
    invalid_attempts: int  # answers refused as truncated, unparseable or incomplete
    attempts_unpriced: int
    degeneration_rate_first_attempt: float | None
    degeneration_rate_final: float | None
    recovered_by: dict[str, int]
    tokens_prompt: int
    tokens_generated: int
    tokens_degenerate: int
    tokens_saved_by_abort: int
    attempts_tokens_estimated: int
    engine_seconds: float
    engine_seconds_degenerate: float
    wall_seconds: float
    job_seconds: float | None
    degeneration_share_of_engine_time: float | None
    counterfactual_wall_seconds: float | None
    inflation_estimate: float | None
    inflation_unknown_reason: str | None
    healthy_slowdown_with_concurrent_degenerate: float | None
    server_tokens_generated: float | None
    server_tokens_unreceived: float | None
    server_tokens_lost_aborts: float | None
    server_degenerate_share: float | None
    server_tokens_reason: str | None
    cost_usd: float
    cost_usd_degenerate: float
    cost_usd_saved_by_abort_estimate: float
    cost_per_1k_pages: float | None
    by_outcome: dict[str, OutcomeFigures] = field(default_factory=dict)
    per_model: list[ModelFigures] = field(default_factory=list)
    server_endpoints: list[ServerTokens] = field(default_factory=list)
    # endpoint -> the loop stop relied on and what the start-up probe found (attempt params)
    loop_stops: dict[str, str] = field(default_factory=dict)
    slowest_pages: list[SlowPage] = field(default_factory=list)
    degenerate_pages: list[DegenerateAttempt] = field(default_factory=list)
    cost_attribution: str = ""
    inflation_method: str = ""
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"schema_version": data.pop("schema_version"), **data}
