"""The plain rows a report is computed from: what the database holds, without SQLAlchemy."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from app.domain import AttemptRole, AttemptStatus

FALSE_ALARM = AttemptStatus.FALSE_ALARM.value
CONFIRM = AttemptRole.CONFIRM.value


@dataclass(frozen=True)
class AttemptRow:
    """One engine call. Times are timezone-aware; `output_tail` is kept for degenerate ones."""

    id: int
    page_id: int
    step_name: str
    engine: str
    model: str | None
    endpoint: str | None
    status: str
    started_at: datetime
    ended_at: datetime
    duration_s: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tokens_estimated: bool = False
    max_tokens: int | None = None
    finish_reason: str | None = None
    aborted: bool = False
    stop_mechanism: str | None = None
    tokens_after_verdict: int | None = None
    verdict_kind: str | None = None
    verdict_period: int | None = None
    verdict_onset: int | None = None
    output_tail: str | None = None
    ttft_s: float | None = None  # seconds from the request to its first token (streamed)
    probe_tokens: int | None = None  # server tokens of a close probe this attempt's call ran
    role: str | None = None  # "confirm": a confirming attempt (app.domain.AttemptRole)
    overruled: int | None = None  # loop verdicts the page's own text overruled (grounding)
    read_cpu_ms: int | None = None  # CPU ms of the scan's read at a verdict (grounding)

    @cached_property
    def start(self) -> float:
        """Start as seconds since the epoch (the timeline functions' clock)."""
        return self.started_at.timestamp()

    @cached_property
    def end(self) -> float:
        return self.ended_at.timestamp()

    @cached_property
    def decoding_from(self) -> float:
        """When the attempt's first token came: before it, it waited for a batch slot."""
        return self.start + min(self.ttft_s or 0.0, self.end - self.start)

    @property
    def unused_cap(self) -> int:
        """Tokens an aborted attempt left under its cap: what its request could still have
        generated after the client left (0 for an attempt that was not aborted, and for a
        false alarm: its page's answer ended under the cap, so nothing was at risk)."""
        if not self.aborted or self.max_tokens is None or self.status == FALSE_ALARM:
            return 0
        return max(0, self.max_tokens - (self.completion_tokens or 0))

    @property
    def resource(self) -> str:
        """What the attempt occupied: its endpoint, or its engine for the CPU engines."""
        return self.endpoint or self.engine


@dataclass(frozen=True)
class PageRow:
    id: int
    document: str
    number: int
    status: str
    final_step: str | None = None
    failure_category: str | None = None


@dataclass(frozen=True)
class DocumentRow:
    name: str
    status: str


@dataclass(frozen=True)
class ServerSampleRow:
    """One reading of an endpoint server's counters (see `app.servermetrics`)."""

    endpoint: str
    metrics_url: str
    worker: str
    phase: str  # start | end
    taken_at: datetime
    generation_tokens: float | None
    prompt_tokens: float | None = None
    requests: float | None = None
    server_started: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class JobRows:
    """A job's rows. `neighbours` are other jobs' attempts that shared an endpoint in time:
    they take their share of GPU time but are not part of this job's figures."""

    job_id: str
    plan: str
    status: str
    started_at: datetime | None
    finished_at: datetime | None
    documents: list[DocumentRow] = field(default_factory=list)
    pages: list[PageRow] = field(default_factory=list)
    attempts: list[AttemptRow] = field(default_factory=list)
    neighbours: list[AttemptRow] = field(default_factory=list)
    server_samples: list[ServerSampleRow] = field(default_factory=list)
    # endpoint -> the loop stop its attempts relied on, and what the start-up probe found
    loop_stops: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ListedJob:
    """What a list of jobs knows of each already (the loader reads the rest)."""

    id: str
    plan: str
    status: str
    started_at: datetime | None
    finished_at: datetime | None
