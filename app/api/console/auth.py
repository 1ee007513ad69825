"""Who is signed in to the console: the API key itself, kept in an HttpOnly, SameSite=Strict
cookie scoped to /console, checked exactly as the API checks a bearer token.

Forms are safe against cross-site requests twice over: the browser sends a SameSite=Strict
cookie on no cross-site request, and every form that changes something carries a token that
only the key's holder can compute (an HMAC of the key), checked with the request's Origin."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from fastapi import HTTPException, Request, Response

from app.api.context import ApiContext
from app.db import keys

COOKIE = "folio_console"
COOKIE_PATH = "/console"
_CSRF_LABEL = b"folio-console-form"


class SignInNeeded(Exception):
    """No live key in the cookie: the console answers with its sign-in page."""


@dataclass(frozen=True)
class Signed:
    """The signed-in key: its id (what the API's services take) and its form token."""

    key_id: int
    csrf: str


def form_token(token: str) -> str:
    return hmac.new(token.encode(), _CSRF_LABEL, hashlib.sha256).hexdigest()


def key_for(ctx: ApiContext, token: str) -> int | None:
    with ctx.db.session() as session:
        return keys.key_for_token(session, token)


def signed_in(request: Request) -> Signed:
    """The caller's live key from the cookie; SignInNeeded otherwise."""
    ctx: ApiContext = request.app.state.folio
    token = request.cookies.get(COOKIE)
    key_id = key_for(ctx, token) if token else None
    if token is None or key_id is None:
        raise SignInNeeded
    return Signed(key_id, form_token(token))


def check_origin(request: Request) -> None:
    """A form posted from another site is refused (browsers send Origin on every POST)."""
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.url.netloc}"
    if origin is not None and origin != own:
        raise HTTPException(403, "a form from another site")


def check_form(request: Request, signed: Signed, sent: str | None) -> None:
    check_origin(request)
    if not sent or not hmac.compare_digest(sent, signed.csrf):
        raise HTTPException(403, "the form's token is missing or stale; reload the page")


def keep_key(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        COOKIE,
        token,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def forget_key(response: Response) -> None:
    response.delete_cookie(COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict")
