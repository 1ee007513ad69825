"""The console's jobs: the list, one job (live progress, the report's charts, documents, the
pages table), its downloads and its cancelling, each through the API's own services."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, StreamingResponse
from markupsafe import Markup

from app.api import jobs_service, pages_service, routes
from app.api.console import auth
from app.api.console.render import ConsoleRoute, page
from app.api.context import Ctx
from app.api.schemas import PageSort
from app.domain import JobStatus, PageStatus
from app.report.build import build_report
from app.report.compute import JobReport
from app.report.format import usd
from app.report.render import ReportFormat, render_report
from app.report.svg_charts import bar_chart_svg, timeline_svg

router = APIRouter(route_class=ConsoleRoute)
Signed = Annotated[auth.Signed, Depends(auth.signed_in)]
JOBS_PER_PAGE = 25
PAGES_PER_PAGE = 50


@router.get("/console/jobs", include_in_schema=False)
@router.get("/console/jobs.json", include_in_schema=False)
def jobs(
    request: Request,
    ctx: Ctx,
    signed: Signed,
    status: JobStatus | None = None,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Response:
    """The key's jobs, newest first, with their figures; filtered by status, paginated."""
    listed = jobs_service.list_jobs(ctx, signed.key_id, status, JOBS_PER_PAGE, offset, figures=True)
    data = {"jobs": listed, "status": status}
    filters = {"status": status.value if status else None}
    return page(request, "jobs.html", data, signed=signed, filters=filters, statuses=JobStatus)


def _charts(job: JobReport) -> dict[str, Markup]:
    """The report's timeline and its tokens and cost by outcome, as the HTML report draws
    them (SVG that the report's code writes and escapes)."""
    pages = {p.id: f"{p.document} p{p.number}" for p in job.rows.pages}
    outcomes = list(job.report.by_outcome.items())
    tokens = [(k, float(v.tokens_generated)) for k, v in outcomes]
    return {
        "timeline": Markup(timeline_svg(job.rows.attempts, pages)),
        "tokens": Markup(
            bar_chart_svg("chart-tokens", "generated tokens", tokens, lambda v: f"{v:,.0f}")
        ),
        "cost": Markup(
            bar_chart_svg("chart-cost", "cost (USD)", [(k, v.cost_usd) for k, v in outcomes], usd)
        ),
    }


@router.get("/console/jobs/{job_id}", include_in_schema=False)
@router.get("/console/jobs/{job_id}.json", include_in_schema=False)
def job(request: Request, ctx: Ctx, signed: Signed, job_id: str) -> Response:
    """One job: progress, the report's figures and charts, documents and the first rows of
    the pages table (in page order; the table's own page sorts and pages through them)."""
    job_id = job_id.removesuffix(".json")
    found = jobs_service.get_job(ctx, signed.key_id, job_id)
    report = build_report(ctx.db, ctx.settings, job_id)
    costs = {attempt_id: cost.total for attempt_id, cost in report.costs.items()}
    window = (PAGES_PER_PAGE, 0)
    priced = (report.rows, costs)
    data = {
        "job": found,
        "documents": jobs_service.documents(ctx, signed.key_id, job_id),
        "pages": pages_service.pages(ctx, signed.key_id, job_id, None, window, priced=priced),
        "report": json.loads(render_report(report, ReportFormat.JSON)),  # the API's answer
    }
    charts = {} if request.url.path.endswith(".json") else _charts(report)
    return page(request, "job.html", data, signed=signed, charts=charts, filters={})


@router.get("/console/jobs/{job_id}/pages", include_in_schema=False)
@router.get("/console/jobs/{job_id}/pages.json", include_in_schema=False)
def pages_table(
    request: Request,
    ctx: Ctx,
    signed: Signed,
    job_id: str,
    status: PageStatus | None = None,
    sort: PageSort = PageSort.PAGE,
    descending: bool = False,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Response:
    """The job's pages table (GET /v1/jobs/{id}/pages): sorted by attempts, loops or cost,
    filtered by status, paginated."""
    found = jobs_service.get_job(ctx, signed.key_id, job_id)
    window = (PAGES_PER_PAGE, offset)
    table = pages_service.pages(ctx, signed.key_id, job_id, status, window, sort, descending)
    filters = {
        "status": status.value if status else None,
        "sort": None if sort == PageSort.PAGE else sort.value,
        "descending": "true" if descending else None,
    }
    data = {"job": found, "pages": table}
    return page(request, "pages.html", data, signed=signed, filters=filters, statuses=PageStatus)


@router.get("/console/jobs/{job_id}/events", include_in_schema=False)
async def job_events(
    ctx: Ctx,
    signed: Signed,
    job_id: str,
    last_event_id: Annotated[str | None, Header(max_length=64)] = None,
) -> StreamingResponse:
    """The API's own event stream of the job (`GET /v1/jobs/{id}/events`), for the signed-in
    key: EventSource sends the cookie, not an Authorization header."""
    return await routes.job_events(ctx, signed.key_id, job_id, last_event_id)


@router.get("/console/jobs/{job_id}/results", include_in_schema=False)
def job_results(ctx: Ctx, signed: Signed, job_id: str) -> Response:
    return routes.get_results(ctx, signed.key_id, job_id)


@router.get("/console/jobs/{job_id}/report.{kind}", include_in_schema=False)
def job_report(ctx: Ctx, signed: Signed, job_id: str, kind: routes.ReportType) -> Response:
    response = routes.get_report(ctx, signed.key_id, job_id, kind)
    name = f"folio-report-{job_id}.{kind.value}"
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@router.post("/console/jobs/{job_id}/cancel", include_in_schema=False)
async def cancel(
    request: Request,
    ctx: Ctx,
    signed: Signed,
    job_id: str,
    csrf: Annotated[str | None, Form(max_length=100)] = None,
) -> Response:
    auth.check_form(request, signed, csrf)
    await run_in_threadpool(jobs_service.cancel, ctx, signed.key_id, job_id)
    return RedirectResponse(f"/console/jobs/{job_id}", status_code=303)
