"""How a console page answers: its template with its data, or, asked for with `.json`, the
same data as JSON (every page has its data twin, as in datasette); errors as a page of their
own, and a sign-in page where no key is signed in."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException

from app.api.console import formats
from app.api.console.auth import SignInNeeded
from app.api.problems import problem

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
templates.env.filters.update(
    usd=formats.usd, pct=formats.pct, num=formats.num, seconds=formats.seconds, when=formats.when
)
templates.env.globals["query"] = formats.query


def wants_json(request: Request) -> bool:
    return request.url.path.endswith(".json")


def page(request: Request, template: str, data: dict[str, Any], **html_only: Any) -> Response:
    """The page: `template` over `data` (plus `html_only`, what only the HTML needs: the
    form token, links), or `data` alone as JSON for a `.json` path."""
    if wants_json(request):
        return JSONResponse(jsonable_encoder(data))
    return templates.TemplateResponse(request, template, {**data, **html_only})


def error_page(request: Request, status: int, detail: str | None) -> Response:
    if wants_json(request):
        return problem(request, status, detail)
    context = {"status": status, "title": HTTPStatus(status).phrase, "detail": detail}
    return templates.TemplateResponse(request, "error.html", context, status_code=status)


def sign_in_redirect(request: Request) -> Response:
    if wants_json(request):
        return problem(request, 401, "sign in to the console first (POST /console/sign-in)")
    back = quote(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
    return RedirectResponse(f"/console/sign-in?next={back}", status_code=303)


class ConsoleRoute(APIRoute):
    """A console route: no key signed in leads to the sign-in page, an error of the API's
    services (404 for another key's job, 409 ...) to an error page of the console."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def console_handler(request: Request) -> Response:
            try:
                return await handle(request)
            except SignInNeeded:
                return sign_in_redirect(request)
            except HTTPException as exc:
                detail = exc.detail if isinstance(exc.detail, str) else None
                return error_page(request, exc.status_code, detail)
            except RequestValidationError as exc:
                fields = ", ".join(str(e.get("loc", ("?",))[-1]) for e in exc.errors())
                return error_page(request, 422, f"not a valid value: {fields}")

        return console_handler
