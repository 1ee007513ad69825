"""One page in the console: its image beside the kept text and every attempt, each attempt's
loop highlighted where it started, and what the page's own text held when a verdict was
checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response

from app.api import page_image, pages_service, routes
from app.api.console import auth
from app.api.console.render import ConsoleRoute, page
from app.api.context import Ctx
from app.api.schemas import AttemptOut

router = APIRouter(route_class=ConsoleRoute)
Signed = Annotated[auth.Signed, Depends(auth.signed_in)]
IMAGE_WIDTH = 640  # the width the page's image is shown at (console.css: .page-image)


@dataclass(frozen=True)
class MarkedOutput:
    """An attempt's output cut around its loop: before it, the unit's first copy (where the
    loop started), and the rest of the output (the loop running on)."""

    before: str
    unit: str
    after: str

    @classmethod
    def of(cls, attempt: AttemptOut) -> MarkedOutput | None:
        verdict, output = attempt.verdict, attempt.output
        if output is None or verdict is None or verdict.onset is None or not attempt.loop_unit:
            return None
        end = verdict.onset + len(attempt.loop_unit)
        return cls(output[: verdict.onset], attempt.loop_unit, output[end:])


@router.get("/console/jobs/{job_id}/pages/{page_id}", include_in_schema=False)
@router.get("/console/jobs/{job_id}/pages/{page_id}.json", include_in_schema=False)
def page_view(request: Request, ctx: Ctx, signed: Signed, job_id: str, page_id: str) -> Response:
    """The page, its text, its attempts (the API's GET /v1/jobs/{id}/pages/{page})."""
    number = _page_number(page_id.removesuffix(".json"))
    detail = pages_service.page(ctx, signed.key_id, job_id, number)
    marked = {a.id: MarkedOutput.of(a) for a in detail.attempts}
    image = f"/console/jobs/{job_id}/pages/{number}/image?width={IMAGE_WIDTH}"
    data = {"job_id": job_id, "page": detail}
    return page(
        request, "page.html", data, signed=signed, marked=marked, image=image, width=IMAGE_WIDTH
    )


def _page_number(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 2**62:
        raise HTTPException(404, f"no page {text!r}")
    return int(text)


@router.get("/console/jobs/{job_id}/pages/{page_id}/image", include_in_schema=False)
def page_image_view(
    ctx: Ctx,
    signed: Signed,
    job_id: str,
    page_id: int,
    width: Annotated[int, Query(ge=16, le=page_image.MAX_WIDTH)] = IMAGE_WIDTH,
) -> Response:
    return routes.get_page_image(ctx, signed.key_id, job_id, page_id, width)
