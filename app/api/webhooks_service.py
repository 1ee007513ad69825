"""The API's webhook services: a key's default callback, and a job's delivery log."""

from __future__ import annotations

from datetime import timedelta

from fastapi import HTTPException

from app.api import schemas
from app.api.context import ApiContext
from app.db import job_views, keys
from app.webhooks.urls import UrlRefused, check_url


def _out(config: keys.WebhookConfig) -> schemas.WebhookOut:
    return schemas.WebhookOut(url=config.url, page_events=config.page_events, secret=config.secret)


def get_webhook(ctx: ApiContext, key: int) -> schemas.WebhookOut:
    with ctx.db.session() as session:
        return _out(keys.webhook_of(session, key))


def set_webhook(ctx: ApiContext, key: int, request: schemas.WebhookIn) -> schemas.WebhookOut:
    if request.url is not None:
        try:
            check_url(request.url, ctx.settings.webhooks.allow_private)
        except UrlRefused as exc:
            raise HTTPException(422, f"url: {exc}") from exc
    with ctx.db.session() as session:
        return _out(keys.set_webhook(session, key, request.url, request.page_events))


def rotate_secret(ctx: ApiContext, key: int) -> schemas.WebhookOut:
    grace = timedelta(hours=ctx.settings.webhooks.rotation_grace_h)
    with ctx.db.session() as session:
        return _out(keys.rotate_webhook_secret(session, key, grace))


def deliveries(ctx: ApiContext, key: int, job_id: str) -> list[schemas.DeliveryOut]:
    with ctx.db.session() as session:
        if job_views.owned_job(session, job_id, key) is None:
            raise HTTPException(404, f"no job {job_id!r}")
        return [schemas.DeliveryOut.of(d) for d in job_views.deliveries(session, job_id)]
