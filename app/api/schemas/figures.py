"""What the API answers about a job's figures (its report's headline numbers) and its pages'
(attempts, loops, tokens, cost): the jobs list and the pages table of the console read them."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from app.api.schemas.pages import PageOut
from app.db.models import Page
from app.report.schema import Report


class JobFigures(BaseModel):
    """A job's headline figures, as its report (GET /v1/jobs/{id}/report) computes them."""

    pages_total: int
    pages_done: int = Field(description="Pages in a terminal status (succeeded, fallback, failed).")
    attempts_total: int
    degenerate_attempts: int
    degeneration_rate_first_attempt: float | None = Field(
        description="Share of tried pages whose first attempt looped."
    )
    degeneration_rate_final: float | None = Field(
        description="Share of tried pages whose last attempt looped."
    )
    tokens_prompt: int
    tokens_generated: int
    cost_usd: float

    @classmethod
    def of(cls, r: Report) -> JobFigures:
        return cls(
            pages_total=r.pages_total,
            pages_done=r.pages_total - r.pages_open,
            attempts_total=r.attempts_total,
            degenerate_attempts=r.degenerate_attempts,
            degeneration_rate_first_attempt=r.degeneration_rate_first_attempt,
            degeneration_rate_final=r.degeneration_rate_final,
            tokens_prompt=r.tokens_prompt,
            tokens_generated=r.tokens_generated,
            cost_usd=r.cost_usd,
        )


class PageSort(StrEnum):
    """What the pages table is ordered by (ties: page order)."""

    PAGE = "page"
    ATTEMPTS = "attempts"
    LOOPS = "loops"
    COST = "cost"


class PageFigures(BaseModel):
    """A page's attempts, loops, tokens and cost (priced as the job's report prices them)."""

    attempt_count: int
    loop_count: int = Field(description="Attempts that looped (status degenerate).")
    tokens_generated: int
    cost_usd: float


class PageRowOut(PageOut):
    """A row of the pages table: the page, its document's name, and its figures."""

    document: str
    figures: PageFigures

    @classmethod
    def row_of(cls, p: Page, document: str, figures: PageFigures) -> PageRowOut:
        return cls(**cls.fields_of(p), document=document, figures=figures)


class PageList(BaseModel):
    items: list[PageRowOut]
    total: int
    limit: int
    offset: int
    sort: PageSort = PageSort.PAGE
    descending: bool = False
