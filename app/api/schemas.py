"""What the API answers: response bodies, built from ORM rows at the route's edge."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.db.models import Attempt, Document, Job, Page
from app.domain import Outcome, page_outcome


class JobOptionsIn(BaseModel):
    """Options of a new job."""

    model_config = ConfigDict(extra="forbid")

    engine: str | None = Field(default=None, max_length=64, description="Attempt plan name.")
    dpi: int | None = Field(default=None, ge=36, le=1200, description="Rendering resolution.")
    priority: int = Field(
        default=0,
        ge=0,
        le=9,
        description="Waiting jobs and their queued tasks go highest first.",
    )
    metadata: dict[str, Any] = Field(default_factory=dict, description="Kept with the job.")
    callback_url: str | None = Field(
        default=None,
        max_length=2048,
        description="Webhook for this job's end (job.finished, job.failed, job.cancelled), "
        "signed with your key's secret (GET /v1/webhook); default: your key's webhook.",
        examples=["https://example.com/folio-hook"],
    )
    callback_events: list[Literal["page.finished"]] = Field(
        default_factory=list,
        max_length=1,
        description="Also send these events to callback_url (opt-in: one per page).",
    )
    repeat_loop_cap: int | None = Field(
        default=None,
        ge=0,
        le=8,
        description="VLM attempts on a page that may repeat a loop already seen on it before "
        "its other VLM steps are skipped (default: the server's repeat_loop_cap).",
    )


class FolderJob(JobOptionsIn):
    """`POST /v1/jobs` as JSON: a folder on the server, under one of its allowed roots."""

    folder: str = Field(
        min_length=1, max_length=4096, pattern=r"^[^\x00]+$", description="Server-side folder path."
    )


class ObjectJob(JobOptionsIn):
    """`POST /v1/jobs` as JSON: PDFs in an object store, under one of the server's allowed
    URIs (`api_allowed_uris`); the server's own credentials read them."""

    uri: str = Field(
        min_length=6,
        max_length=2048,
        pattern=r"^s3://[^/]+(/.*)?$",
        description="An s3://bucket/prefix/ whose PDFs make the job, or an s3:// manifest "
        "(.txt) with one s3:// URI per line.",
        examples=["s3://scans/2026/batch-7/"],
    )
    results_uri: str | None = Field(
        default=None,
        max_length=2048,
        pattern=r"^s3://[^/]+(/.*)?$",
        description="An s3:// prefix the results go to when the job ends (per-document .md "
        "and .json, summary.json, report.json), under an allowed URI.",
    )
    result_urls: dict[str, str] = Field(
        default_factory=dict,
        max_length=10_000,
        description="Pre-signed PUT URLs the results are sent to when the job ends, by file "
        "name (`<document>.md`, `<document>.json`, `summary.json`, `report.json`); a file "
        "without a URL is not sent.",
    )


class JobLinks(BaseModel):
    self: str
    documents: str
    pages: str
    report: str
    results: str
    cancel: str


class JobOut(BaseModel):
    id: str
    status: str
    plan: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    options: dict[str, Any]
    documents: dict[str, int] = Field(description="Documents by status.")
    pages: dict[str, int] = Field(description="Pages by status.")
    links: JobLinks

    @classmethod
    def of(cls, job: Job, progress: dict[str, Any]) -> JobOut:
        base = f"/v1/jobs/{job.id}"
        links = JobLinks(
            self=base,
            documents=f"{base}/documents",
            pages=f"{base}/pages",
            report=f"{base}/report",
            results=f"{base}/results",
            cancel=f"{base}/cancel",
        )
        return cls(
            id=job.id,
            status=job.status,
            plan=job.plan_name,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            options=job.options,
            documents=progress["documents"],
            pages=progress["pages"],
            links=links,
        )


class JobList(BaseModel):
    items: list[JobOut]
    total: int
    limit: int
    offset: int


class FailedPageOut(BaseModel):
    """A page of a `partial` (or `failed`) document that has no text."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 41,
                    "number": 3,
                    "outcome": "degenerate",
                    "failure_category": "degenerate",
                    "retryable": False,
                    "error": "every attempt failed (degenerate, degenerate); the same loop "
                    "came back 1 time(s)",
                }
            ]
        }
    )

    id: int
    number: int
    outcome: Outcome
    failure_category: str | None
    retryable: bool | None
    error: str | None

    @classmethod
    def of(cls, p: Page) -> FailedPageOut:
        outcome, retryable = page_outcome(p.status, p.failure_category)
        return cls(
            id=p.id,
            number=p.number,
            outcome=outcome,
            failure_category=p.failure_category,
            retryable=retryable,
            error=p.error,
        )


class DocumentOut(BaseModel):
    id: int
    name: str
    status: str = Field(
        description="pending, running, done, partial (some pages failed: see failed_pages), "
        "failed or skipped."
    )
    page_count: int
    size_bytes: int
    error_category: str | None
    error: str | None
    failed_pages: list[FailedPageOut] = Field(
        default_factory=list, description="The pages without text, each with why."
    )

    @classmethod
    def of(cls, d: Document, failed: list[Page] | None = None) -> DocumentOut:
        return cls(
            id=d.id,
            name=d.name,
            status=d.status,
            page_count=d.page_count,
            size_bytes=d.size_bytes,
            error_category=d.error_category,
            error=d.error,
            failed_pages=[FailedPageOut.of(p) for p in failed or []],
        )


class PageOut(BaseModel):
    id: int
    document_id: int
    number: int
    status: str
    outcome: Outcome = Field(
        description="ok (first attempt answered), fallback (a later step answered), "
        "degenerate (every attempt looped: no text), failed (no text; failure_category says "
        "why), or pending/running."
    )
    retryable: bool | None = Field(
        description="For a page without text: whether a new try may succeed (transport, "
        "internal, cancelled) or not (degenerate, render, empty ...); null otherwise."
    )
    engine: str | None
    step: str | None
    failure_category: str | None
    error: str | None

    @classmethod
    def fields_of(cls, p: Page) -> dict[str, Any]:
        outcome, retryable = page_outcome(p.status, p.failure_category)
        return {
            "id": p.id,
            "document_id": p.document_id,
            "number": p.number,
            "status": p.status,
            "outcome": outcome,
            "retryable": retryable,
            "engine": p.final_engine,
            "step": p.final_step,
            "failure_category": p.failure_category,
            "error": p.error,
        }

    @classmethod
    def of(cls, p: Page) -> PageOut:
        return cls(**cls.fields_of(p))


class PageList(BaseModel):
    items: list[PageOut]
    total: int
    limit: int
    offset: int


class VerdictOut(BaseModel):
    kind: str
    period: int | None
    onset: int | None


class AttemptOut(BaseModel):
    id: int
    step_index: int
    step: str
    engine: str
    model: str | None
    status: str = Field(
        description="ok, degenerate (a loop verdict cut it), invalid, empty, error, "
        "transport_error, rejected (text layer refused), or false_alarm (a loop verdict that "
        "the page's confirming attempt proved wrong: its answer was kept)."
    )
    role: str | None = Field(
        default=None,
        description="confirm: the step run again with the loop stop off, after a retry was "
        "stopped by the same verdict at the same place on the same text; null: a plan step.",
    )
    verdict: VerdictOut | None
    aborted: bool
    finish_reason: str | None
    stop_mechanism: str | None = Field(
        description="Which stop ended the attempt: engine_plugin, abort_call, "
        "server_repetition, client_close or none."
    )
    tokens_after_verdict: int | None = Field(
        description="Tokens the server generated after Folio's loop verdict; null where "
        "the server does not tell (tokens_after_verdict_note says why)."
    )
    tokens_after_verdict_note: str | None
    duration_s: float
    completion_tokens: int | None
    error: str | None

    @classmethod
    def of(cls, a: Attempt) -> AttemptOut:
        verdict = (
            VerdictOut(kind=a.verdict_kind, period=a.verdict_period, onset=a.verdict_onset)
            if a.verdict_kind
            else None
        )
        return cls(
            id=a.id,
            step_index=a.step_index,
            step=a.step_name,
            engine=a.engine,
            model=a.model,
            status=a.status,
            role=a.role,
            verdict=verdict,
            aborted=a.aborted,
            finish_reason=a.finish_reason,
            stop_mechanism=a.stop_mechanism,
            tokens_after_verdict=a.tokens_after_verdict,
            tokens_after_verdict_note=a.tokens_after_verdict_note,
            duration_s=a.duration_s,
            completion_tokens=a.completion_tokens,
            error=a.error,
        )


POSITIONS_EXAMPLE = {
    "source": "textlayer",
    "page": {"width_pt": 612.0, "height_pt": 792.0, "width_px": 1700, "height_px": 2200},
    "lines": [
        {
            "text": "Annual report",
            "box_pt": [72.0, 71.2, 160.3, 85.1],
            "box_px": [200.0, 197.8, 445.3, 236.4],
        }
    ],
    "words": [
        {
            "text": "Annual",
            "box_pt": [72.0, 71.2, 110.5, 85.1],
            "box_px": [200.0, 197.8, 306.9, 236.4],
            "line": 0,
        },
        {
            "text": "report",
            "box_pt": [113.2, 71.2, 160.3, 85.1],
            "box_px": [314.4, 197.8, 445.3, 236.4],
            "line": 0,
        },
    ],
}


VLM_POSITIONS_EXAMPLE = {
    "source": "vlm",
    "profile": "deepseek-ocr-grounding@2025-10",
    "page": {"width_pt": 612.0, "height_pt": 792.0, "width_px": 1224, "height_px": 1584},
    "lines": [],
    "words": [],
    "blocks": [
        {
            "text": "# Annual report",
            "box_pt": [61.26, 39.64, 551.35, 95.14],
            "box_px": [122.5, 79.3, 1102.7, 190.3],
            "category": "title",
        }
    ],
}


class PageDetail(PageOut):
    text: str | None
    positions: dict[str, Any] | None = Field(
        description="Words and lines of the answer with their boxes, [x0, y0, x1, y1] from the "
        "top left, in PDF points (box_pt) and in pixels of the page as rendered (box_px); for "
        "a VLM whose profile places blocks (source vlm), its blocks with their category, the "
        "pixels being those of the image sent to the model; null where the engine that "
        "answered gives none.",
        examples=[POSITIONS_EXAMPLE, VLM_POSITIONS_EXAMPLE],
    )
    attempts: list[AttemptOut]

    @classmethod
    def detail_of(cls, p: Page) -> PageDetail:
        attempts = [AttemptOut.of(a) for a in p.attempts]
        answer = next(
            (
                a
                for a in reversed(p.attempts)
                if a.step_name == p.final_step and a.status in ANSWERS
            ),
            None,
        )
        positions = answer.positions if answer is not None and p.final_step else None
        return cls(**cls.fields_of(p), text=p.text, positions=positions, attempts=attempts)


ANSWERS = ("ok", "empty")


EVENTS_EXAMPLE = (
    "retry: 2000\n\n"
    "id: 1795000000123456-41\nevent: page.finished\n"
    'data: {"job_id":"9f2c...","page":{"id":41,"document_id":7,"number":3,"status":"fallback",'
    '"outcome":"fallback","retryable":null,"failure_category":null,"engine":"textlayer"},'
    '"pages":{"succeeded":2,"fallback":1,"pending":5},"finished":3,"total":8,"eta_s":12.5}\n\n'
    "id: 1795000009000000-end\nevent: job.finished\n"
    'data: {"pages":{"succeeded":7,"fallback":1},"finished":8,"total":8,"eta_s":0.0}\n\n'
)


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
