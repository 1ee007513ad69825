"""Every error the API answers is RFC 9457 problem details (`application/problem+json`)."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

log = logging.getLogger(__name__)
PROBLEM_JSON = "application/problem+json"


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None


def problem(
    request: Request,
    status: int,
    detail: str | None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        **extra,
    }
    return JSONResponse(
        jsonable_encoder(body), status_code=status, media_type=PROBLEM_JSON, headers=headers
    )


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else None
    return problem(request, exc.status_code, detail, dict(exc.headers or {}))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in exc.errors()
    ]
    return problem(request, 422, "the request is not valid; see errors", errors=errors)


async def _too_deep(request: Request, exc: Exception) -> JSONResponse:
    # The JSON decoder's recursion guard: a body nested thousands of levels deep is the
    # client's error, as a shallower one is (pydantic answers 422 below its own limit).
    if "JSON" not in str(exc):
        return await _unexpected(request, exc)
    return problem(request, 422, "the JSON body is nested too deeply")


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    # The API's edge: the failure is logged with its traceback, the client gets no internals.
    log.exception("unhandled error on %s", request.url.path, exc_info=exc)
    return problem(request, 500, "internal error; the server log has the details")


def install_problem_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(RecursionError, _too_deep)
    app.add_exception_handler(Exception, _unexpected)
