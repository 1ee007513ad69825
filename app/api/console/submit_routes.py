"""A new job from the console: PDFs or a zip uploaded, or an s3:// URI the server allows, with
the job's options; the API's own form parsing and submit services."""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from app.api import jobs_service, routes, schemas
from app.api.console import auth
from app.api.console.render import ConsoleRoute, templates
from app.api.context import ApiContext, Ctx

router = APIRouter(route_class=ConsoleRoute)
Signed = Annotated[auth.Signed, Depends(auth.signed_in)]


def _form_page(
    request: Request, ctx: ApiContext, signed: auth.Signed, error: str | None, status: int = 200
) -> Response:
    context = {
        "signed": signed,
        "plans": sorted(ctx.settings.plans),
        "default_plan": ctx.settings.plan_name(None),
        "default_dpi": ctx.settings.dpi,
        "error": error,
    }
    return templates.TemplateResponse(request, "submit.html", context, status_code=status)


@router.get("/console/submit", include_in_schema=False)
def submit_page(request: Request, ctx: Ctx, signed: Signed) -> Response:
    return _form_page(request, ctx, signed, None)


@router.post("/console/submit", include_in_schema=False)
async def submit(request: Request, ctx: Ctx, signed: Signed) -> Response:
    """Start the job and show it; the form again with the reason when the API refuses it."""
    form = await routes.read_form(request, ctx.settings.api_max_files_per_job)
    try:
        csrf = form.get("csrf")
        auth.check_form(request, signed, csrf if isinstance(csrf, str) else None)
        job = await _start(ctx, signed.key_id, form)
    except (HTTPException, RequestValidationError) as exc:
        return _form_page(request, ctx, signed, _reason(exc), _status(exc))
    finally:
        await form.close()
    return RedirectResponse(f"/console/jobs/{job.id}", status_code=303)


async def _start(ctx: ApiContext, key: int, form: Any) -> schemas.JobOut:
    options = routes.form_options(form)
    uploads = [f for f in form.getlist("files") if isinstance(f, UploadFile) and f.filename]
    uri = form.get("uri")
    if isinstance(uri, str) and uri.strip():
        if uploads:
            raise HTTPException(422, "send files or a URI, not both")
        objects = _valid(schemas.ObjectJob, {**options, "uri": uri.strip()})
        return await run_in_threadpool(jobs_service.submit_uri, ctx, key, objects)
    if not uploads:
        raise HTTPException(422, "choose PDFs (or a zip of them), or give an s3:// URI")
    valid = _valid(schemas.JobOptionsIn, options)
    return await run_in_threadpool(jobs_service.submit_uploads, ctx, key, uploads, valid)


_M = TypeVar("_M", bound=schemas.JobOptionsIn)


def _valid(model: type[_M], values: dict[str, Any]) -> _M:
    try:
        return model.model_validate_json(json.dumps(values))
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False)) from exc


def _reason(exc: HTTPException | RequestValidationError) -> str:
    if isinstance(exc, HTTPException):
        return str(exc.detail)
    return "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'form'}: {e.get('msg', '')}"
        for e in exc.errors()
    )


def _status(exc: HTTPException | RequestValidationError) -> int:
    return exc.status_code if isinstance(exc, HTTPException) else 422
