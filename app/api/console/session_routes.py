"""Signing in and out of the console."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request, Response
from fastapi.responses import RedirectResponse

from app.api.console import auth
from app.api.console.render import ConsoleRoute, templates
from app.api.context import Ctx

router = APIRouter(route_class=ConsoleRoute)


def _safe_next(target: str | None) -> str:
    """Only a console path: a sign-in never sends the browser elsewhere."""
    if target and target.startswith("/console/") and not target.startswith("/console//"):
        return target
    return "/console/jobs"


@router.get("/", include_in_schema=False)
@router.get("/console", include_in_schema=False)
def console_root() -> Response:
    return RedirectResponse("/console/jobs", status_code=303)


@router.get("/console/sign-in", include_in_schema=False)
def sign_in_page(request: Request, next: str | None = None) -> Response:
    context = {"next": _safe_next(next), "failed": False}
    return templates.TemplateResponse(request, "sign_in.html", context)


@router.post("/console/sign-in", include_in_schema=False)
def sign_in(
    request: Request,
    ctx: Ctx,
    token: Annotated[str, Form(max_length=200)],
    next: Annotated[str | None, Form(max_length=2000)] = None,
) -> Response:
    """Keep the key in the cookie when it is a live key; the sign-in page again otherwise."""
    auth.check_origin(request)
    if auth.key_for(ctx, token.strip()) is None:
        context = {"next": _safe_next(next), "failed": True}
        return templates.TemplateResponse(request, "sign_in.html", context, status_code=401)
    response = RedirectResponse(_safe_next(next), status_code=303)
    auth.keep_key(request, response, token.strip())
    return response


@router.post("/console/sign-out", include_in_schema=False)
def sign_out(
    request: Request,
    signed: Annotated[auth.Signed, Depends(auth.signed_in)],
    csrf: Annotated[str | None, Form(max_length=100)] = None,
) -> Response:
    auth.check_form(request, signed, csrf)
    response = RedirectResponse("/console/sign-in", status_code=303)
    auth.forget_key(response)
    return response
