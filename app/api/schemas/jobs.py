"""What the API answers about jobs and their documents (and the event stream's shape), built
from ORM rows at the route's edge."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.figures import JobFigures
from app.api.schemas.times import UtcDatetime
from app.db.models import Document, Job, Page
from app.domain import Outcome, page_outcome


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
    created_at: UtcDatetime
    started_at: UtcDatetime | None
    finished_at: UtcDatetime | None
    options: dict[str, Any]
    documents: dict[str, int] = Field(description="Documents by status.")
    pages: dict[str, int] = Field(description="Pages by status.")
    links: JobLinks
    figures: JobFigures | None = Field(
        default=None,
        description="With `figures=true` on the jobs list: the report's headline figures "
        "(pages done, degeneration first and final, tokens, cost); null otherwise.",
    )

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


EVENTS_EXAMPLE = (
    "retry: 2000\n\n"
    "id: 1795000000123456-41\nevent: page.finished\n"
    'data: {"job_id":"9f2c...","page":{"id":41,"document_id":7,"number":3,"status":"fallback",'
    '"outcome":"fallback","retryable":null,"failure_category":null,"engine":"textlayer"},'
    '"pages":{"succeeded":2,"fallback":1,"pending":5},"finished":3,"total":8,"eta_s":12.5}\n\n'
    "id: 1795000009000000-end\nevent: job.finished\n"
    'data: {"pages":{"succeeded":7,"fallback":1},"finished":8,"total":8,"eta_s":0.0}\n\n'
)
