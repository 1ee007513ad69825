"""What the routes depend on: the app's services, and the caller's API key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.api.runner import JobRunner
from app.db import keys
from app.db.engine import Database
from app.report.metrics import FolioMetrics
from app.settings import Settings

_bearer = HTTPBearer(auto_error=False, description="An API key from `folio apikey create`.")


@dataclass(frozen=True)
class ApiContext:
    settings: Settings
    db: Database
    runner: JobRunner
    metrics: FolioMetrics


def context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.folio
    return ctx


def api_key(
    ctx: Annotated[ApiContext, Depends(context)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> int:
    """The id of the caller's live API key; 401 otherwise."""
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(
            401, "send an API key: Authorization: Bearer <key>", {"WWW-Authenticate": "Bearer"}
        )
    with ctx.db.session() as session:
        key_id = keys.key_for_token(session, credentials.credentials)
    if key_id is None:
        raise HTTPException(
            401, "unknown or revoked API key", {"WWW-Authenticate": 'Bearer error="invalid_token"'}
        )
    return key_id


Ctx = Annotated[ApiContext, Depends(context)]
KeyId = Annotated[int, Depends(api_key)]
