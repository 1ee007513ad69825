"""The /v1 routes: parse the request, call a service, shape the answer. No business logic here."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Header, HTTPException, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError
from starlette.background import BackgroundTask
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api import events, jobs_service, page_image, pages_service, schemas, webhooks_service
from app.api.context import Ctx, KeyId
from app.api.problems import Problem
from app.api.schemas import FolderJob, JobOptionsIn, ObjectJob, PageSort
from app.domain import JobStatus, PageStatus
from app.progress.feed import JobFeed
from app.report.build import build_report
from app.report.render import ReportFormat, render_report

router = APIRouter(prefix="/v1")
MAX_WAIT_S = 300
_PROBLEM = {"content": {"application/problem+json": {"schema": Problem.model_json_schema()}}}
PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: {"description": text, **_PROBLEM}
    for code, text in {
        401: "No valid API key",
        404: "No such job (or not yours)",
        422: "Invalid parameters",
    }.items()
}
KEY_PROBLEMS: dict[int | str, dict[str, Any]] = {code: PROBLEMS[code] for code in (401, 422)}
_FORM_FIELDS = {
    "files": {"type": "array", "items": {"type": "string", "format": "binary"}},
    **{k: v for k, v in JobOptionsIn.model_json_schema()["properties"].items() if k != "metadata"},
    "metadata": {"type": "string", "description": "A JSON object kept with the job."},
    "callback_events": {"type": "string", "description": "Comma-separated: page.finished."},
}
_SUBMIT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {"type": "object", "properties": _FORM_FIELDS, "required": ["files"]}
            },
            "application/json": {
                "schema": {"oneOf": [FolderJob.model_json_schema(), ObjectJob.model_json_schema()]}
            },
        },
    }
}


_M = TypeVar("_M", bound=JobOptionsIn)


class ReportType(StrEnum):
    JSON = "json"
    HTML = "html"
    CSV = "csv"


_REPORT_MEDIA = {
    ReportType.JSON: "application/json",
    ReportType.HTML: "text/html; charset=utf-8",
    ReportType.CSV: "text/csv; charset=utf-8",
}


@router.post(
    "/jobs",
    status_code=202,
    openapi_extra=_SUBMIT_BODY,
    responses={**PROBLEMS, 413: {"description": "Over an upload limit", **_PROBLEM}},
)
async def submit_job(request: Request, response: Response, ctx: Ctx, key: KeyId) -> schemas.JobOut:
    """Upload PDFs (multipart `files`, or one zip), or name a server folder or an s3:// URI
    (JSON); runs async."""
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        body = await request.body()
        if _names_uri(body):
            objects = _parse(ObjectJob, body)
            job = await run_in_threadpool(jobs_service.submit_uri, ctx, key, objects)
        else:
            folder = _parse(FolderJob, body)
            job = await run_in_threadpool(jobs_service.submit_folder, ctx, key, folder)
    elif content_type.startswith("multipart/form-data"):
        form = await read_form(request, ctx.settings.api_max_files_per_job)
        try:
            options = _parse(JobOptionsIn, json.dumps(form_options(form)).encode())
            uploads = [f for f in form.getlist("files") if isinstance(f, UploadFile)]
            if not uploads:
                raise HTTPException(422, "send at least one file in the `files` field")
            job = await run_in_threadpool(jobs_service.submit_uploads, ctx, key, uploads, options)
        finally:
            await form.close()
    else:
        raise HTTPException(415, "send multipart/form-data (files) or application/json (folder)")
    response.headers["Location"] = job.links.self
    return job


def _names_uri(body: bytes) -> bool:
    """Whether a JSON job names an s3:// URI (`uri`) rather than a server folder."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return False
    return isinstance(parsed, dict) and "uri" in parsed


async def read_form(request: Request, max_files: int) -> Any:
    try:
        return await request.form(max_files=max_files, max_fields=20)
    except StarletteHTTPException as exc:
        if exc.status_code == 400 and "Too many files" in str(exc.detail):
            raise HTTPException(413, f"more than {max_files} files in one job") from exc
        raise


def form_options(form: Any) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for name in (
        "engine",
        "dpi",
        "priority",
        "metadata",
        "callback_url",
        "repeat_loop_cap",
        "pdf",
    ):
        value = form.get(name)
        if isinstance(value, str) and value != "":
            options[name] = value
    events = form.get("callback_events")
    if isinstance(events, str) and events:
        options["callback_events"] = [e.strip() for e in events.split(",") if e.strip()]
    if "metadata" in options:
        try:
            options["metadata"] = json.loads(options["metadata"])
        except ValueError as exc:
            raise HTTPException(422, "metadata must be a JSON object") from exc
    return options


def _parse(model: type[_M], body: bytes) -> _M:
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False, include_context=False)) from exc


@router.get("/jobs", responses=PROBLEMS)
def list_jobs(
    ctx: Ctx,
    key: KeyId,
    status: JobStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    figures: Annotated[
        bool, Query(description="Each job with its report's headline figures (slower).")
    ] = False,
) -> schemas.JobList:
    """Your jobs, newest first."""
    return jobs_service.list_jobs(ctx, key, status, limit, offset, figures)


@router.get("/jobs/{job_id}", responses=PROBLEMS)
async def get_job(
    ctx: Ctx,
    key: KeyId,
    job_id: str,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_S,
            description="Seconds to hold the answer until the job is done or cancelled "
            "(a long poll); 0 answers at once.",
            examples=[30],
        ),
    ] = 0,
) -> schemas.JobOut:
    """Status and progress counts; with `wait`, as soon as the job ends or the wait runs out."""
    job = await run_in_threadpool(jobs_service.get_job, ctx, key, job_id)
    if wait == 0 or job.status in events.ENDED:
        return job
    poll = ctx.settings.events_poll_s
    return await events.wait_for_end(lambda: jobs_service.get_job(ctx, key, job_id), wait, poll)


@router.get(
    "/jobs/{job_id}/events",
    responses={
        **PROBLEMS,
        200: {
            "description": "Server-Sent Events: `page.finished` per page, then one of "
            "`job.finished`, `job.failed`, `job.cancelled`; the stream ends after it.",
            "content": {"text/event-stream": {"example": schemas.EVENTS_EXAMPLE}},
        },
    },
    response_class=StreamingResponse,
)
async def job_events(
    ctx: Ctx,
    key: KeyId,
    job_id: str,
    last_event_id: Annotated[
        str | None,
        Header(
            max_length=64,
            description="Resume after this event: pages that finished from a few seconds "
            "before it are sent again (dedupe by page id).",
        ),
    ] = None,
) -> StreamingResponse:
    """Live progress: each finished page with its outcome, the counts and an ETA."""
    await run_in_threadpool(jobs_service.get_job, ctx, key, job_id)
    feed = JobFeed(ctx.db, job_id, last_event_id)
    return StreamingResponse(
        events.sse_stream(feed, ctx.settings.events_poll_s),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/jobs/{job_id}/documents", responses=PROBLEMS)
def list_documents(ctx: Ctx, key: KeyId, job_id: str) -> list[schemas.DocumentOut]:
    """The job's documents, failed ones with their reason."""
    return jobs_service.documents(ctx, key, job_id)


@router.get("/jobs/{job_id}/pages", responses=PROBLEMS)
def list_pages(
    ctx: Ctx,
    key: KeyId,
    job_id: str,
    status: PageStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    sort: PageSort = PageSort.PAGE,
    descending: bool = False,
) -> schemas.PageList:
    """The job's pages, optionally of one status, each with its attempts, loops, tokens and
    cost; in page order, or sorted by a figure."""
    window = (limit, offset)
    return pages_service.pages(ctx, key, job_id, status, window, sort, descending)


PageId = Annotated[int, Path(ge=1, le=2**62)]


@router.get("/jobs/{job_id}/pages/{page_id}", responses=PROBLEMS)
def get_page(ctx: Ctx, key: KeyId, job_id: str, page_id: PageId) -> schemas.PageDetail:
    """One page: its text and every attempt with its output, verdict, loop unit and cost."""
    return pages_service.page(ctx, key, job_id, page_id)


@router.get(
    "/jobs/{job_id}/pages/{page_id}/image",
    responses={**PROBLEMS, 200: {"content": {"image/png": {}}}, 410: _PROBLEM},
    response_class=Response,
)
def get_page_image(
    ctx: Ctx,
    key: KeyId,
    job_id: str,
    page_id: PageId,
    width: Annotated[int, Query(ge=16, le=page_image.MAX_WIDTH)] = 800,
) -> Response:
    """The page as Folio rasterised it for its engines, rendered at most `width` pixels wide
    (PNG); 410 when its document can no longer be read."""
    png = page_image.page_png(ctx, key, job_id, page_id, width)
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})


@router.get(
    "/jobs/{job_id}/report",
    responses={**PROBLEMS, 200: {"content": {m: {} for m in _REPORT_MEDIA.values()}}},
)
def get_report(ctx: Ctx, key: KeyId, job_id: str, format: ReportType = ReportType.JSON) -> Response:
    """Cost and degeneration report (see `folio report`)."""
    jobs_service.get_job(ctx, key, job_id)
    report = build_report(ctx.db, ctx.settings, job_id)
    text = render_report(report, ReportFormat(format.value))
    return Response(text, media_type=_REPORT_MEDIA[format])


@router.get(
    "/jobs/{job_id}/results",
    responses={**PROBLEMS, 200: {"content": {"application/zip": {}}}},
    response_class=FileResponse,
)
def get_results(ctx: Ctx, key: KeyId, job_id: str) -> FileResponse:
    """A zip of each document's Markdown and JSON, and `summary.json`."""
    path = jobs_service.results_zip(ctx, key, job_id)
    return FileResponse(
        path,
        media_type="application/zip",
        filename=f"folio-{job_id}.zip",
        background=BackgroundTask(path.unlink, missing_ok=True),
    )


@router.post("/jobs/{job_id}/cancel", responses={**PROBLEMS, 409: _PROBLEM})
def cancel_job(ctx: Ctx, key: KeyId, job_id: str) -> schemas.JobOut:
    """Stop a job: pages not finished yet fail as `cancelled`."""
    return jobs_service.cancel(ctx, key, job_id)


@router.get("/jobs/{job_id}/deliveries", responses=PROBLEMS)
def list_deliveries(ctx: Ctx, key: KeyId, job_id: str) -> list[schemas.DeliveryOut]:
    """Every webhook of the job, each with its HTTP attempts (status code, latency)."""
    return webhooks_service.deliveries(ctx, key, job_id)


@router.get("/webhook", responses=KEY_PROBLEMS)
def get_webhook(ctx: Ctx, key: KeyId) -> schemas.WebhookOut:
    """Your key's default webhook and the secret that signs all your webhooks."""
    return webhooks_service.get_webhook(ctx, key)


@router.put("/webhook", responses=KEY_PROBLEMS)
def put_webhook(ctx: Ctx, key: KeyId, request: schemas.WebhookIn) -> schemas.WebhookOut:
    """Set (or, with a null url, clear) your key's default webhook."""
    return webhooks_service.set_webhook(ctx, key, request)


@router.post("/webhook/secret", responses=KEY_PROBLEMS)
def rotate_webhook_secret(ctx: Ctx, key: KeyId) -> schemas.WebhookOut:
    """A new signing secret for your webhooks; the old one signs them too (a second `v1=`)
    for `webhooks.rotation_grace_h`, so your receiver can switch without losing any."""
    return webhooks_service.rotate_secret(ctx, key)


metrics_router = APIRouter()


@metrics_router.get("/metrics", responses={**PROBLEMS, 200: {"content": {CONTENT_TYPE_LATEST: {}}}})
def metrics(ctx: Ctx, key: KeyId) -> Response:
    """Prometheus metrics of this server's jobs."""
    return Response(generate_latest(ctx.metrics.registry), media_type=CONTENT_TYPE_LATEST)
