"""The API's page services: the pages table (each page with its attempts, loops, tokens and
cost, sortable by them) and one page with every attempt priced. Costs are the report's own
(`app.report.cost`, over the job's rows as the report loads them), so a page's cost here sums
to the report's `cost_usd` over the job's pages."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import HTTPException

from app.api import schemas
from app.api.context import ApiContext
from app.api.jobs_service import owned
from app.api.schemas import PageFigures, PageSort
from app.db import job_views
from app.domain import AttemptStatus
from app.report.cost import attempt_costs
from app.report.load import load_job_rows
from app.report.pricing import pricing_from_settings
from app.report.rows import JobRows, PageRow


@dataclass(frozen=True)
class _Row:
    page: PageRow
    figures: PageFigures


_ORDER: dict[PageSort, Callable[[_Row], tuple[float, ...]]] = {
    PageSort.PAGE: lambda r: (),
    PageSort.ATTEMPTS: lambda r: (r.figures.attempt_count,),
    PageSort.LOOPS: lambda r: (r.figures.loop_count,),
    PageSort.COST: lambda r: (r.figures.cost_usd,),
}


def page_figures(rows: JobRows, costs: dict[int, float]) -> dict[int, PageFigures]:
    """Each of the job's pages' figures, by page id (pages without attempts: zeros)."""
    by_page: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    cost: dict[int, float] = defaultdict(float)
    for a in rows.attempts:
        counts = by_page[a.page_id]
        counts[0] += 1
        counts[1] += a.status == AttemptStatus.DEGENERATE
        counts[2] += a.completion_tokens or 0
        cost[a.page_id] += costs.get(a.id, 0.0)
    return {
        p.id: PageFigures(
            attempt_count=by_page[p.id][0],
            loop_count=by_page[p.id][1],
            tokens_generated=by_page[p.id][2],
            cost_usd=cost[p.id],
        )
        for p in rows.pages
    }


def _priced_rows(ctx: ApiContext, job_id: str) -> tuple[JobRows, dict[int, float]]:
    """The job's rows and each attempt's cost (only GPU time is shared with other jobs)."""
    pricing = pricing_from_settings(ctx.settings)
    rows = load_job_rows(ctx.db, job_id, shared=pricing.gpu_priced(), tails=False)
    priced = attempt_costs(rows.attempts, rows.neighbours, pricing)
    return rows, {attempt_id: cost.total for attempt_id, cost in priced.items()}


def pages(
    ctx: ApiContext,
    key: int,
    job_id: str,
    status: str | None,
    window: tuple[int, int],
    sort: PageSort = PageSort.PAGE,
    descending: bool = False,
    priced: tuple[JobRows, dict[int, float]] | None = None,
) -> schemas.PageList:
    """The job's pages (of one status, or all) in `sort` order, `window` = (limit, offset);
    `priced`: the job's rows and attempt costs where the caller has them already (a report)."""
    limit, offset = window
    with ctx.db.session() as session:
        owned(session, job_id, key)
    rows, costs = priced or _priced_rows(ctx, job_id)
    figures = page_figures(rows, costs)
    table = [_Row(p, figures[p.id]) for p in rows.pages if status is None or p.status == status]
    # The rows come in document and page order; a stable sort keeps it within equal figures,
    # whichever way they are sorted.
    table.sort(key=_ORDER[sort], reverse=descending)
    shown = table[offset : offset + limit]
    with ctx.db.session() as session:
        found = job_views.pages_by_id(session, job_id, [r.page.id for r in shown])
        items = [
            schemas.PageRowOut.row_of(found[r.page.id], r.page.document, r.figures)
            for r in shown
            if r.page.id in found
        ]
    return schemas.PageList(
        items=items, total=len(table), limit=limit, offset=offset, sort=sort, descending=descending
    )


def page(ctx: ApiContext, key: int, job_id: str, page_id: int) -> schemas.PageDetail:
    """One page with its text and every attempt, each priced as the job's report prices it."""
    with ctx.db.session() as session:
        owned(session, job_id, key)
        found = job_views.page_with_attempts(session, job_id, page_id)
        if found is None:
            raise HTTPException(404, f"no page {page_id} in job {job_id!r}")
        _, costs = _priced_rows(ctx, job_id)
        return schemas.PageDetail.detail_of(found, costs)
