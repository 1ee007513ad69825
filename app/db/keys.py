"""API keys: create, look up by token, revoke, list. Tokens are never stored, only their hash."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from app.db.models import ApiKey
from app.webhooks.signing import new_secret

TOKEN_PREFIX = "folio_"


@dataclass(frozen=True)
class KeyInfo:
    id: int
    name: str
    created_at: datetime
    revoked_at: datetime | None


def hash_token(token: str) -> str:
    # A 256-bit random token needs no salt or slow hash: guessing it is the only attack.
    return hashlib.sha256(token.encode()).hexdigest()


def create_key(session: Session, name: str) -> tuple[KeyInfo, str]:
    """A new key called `name` and its token, which is shown once and never stored."""
    if session.scalar(select(ApiKey.id).where(ApiKey.name == name)) is not None:
        raise ValueError(f"an API key named {name!r} exists already")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(name=name, token_sha256=hash_token(token))
    session.add(key)
    session.flush()
    return _info(key), token


def key_for_token(session: Session, token: str) -> int | None:
    """The id of the live key whose token this is (or was, until its rotation's grace
    ends), else None."""
    digest = hash_token(token)
    current = ApiKey.token_sha256 == digest
    previous = and_(
        ApiKey.previous_token_sha256 == digest, ApiKey.previous_token_until > datetime.now(UTC)
    )
    query = select(ApiKey.id).where(or_(current, previous), ApiKey.revoked_at.is_(None))
    return session.scalar(query)


def rotate_token(session: Session, id_or_name: str, grace: timedelta) -> tuple[KeyInfo, str]:
    """A new token for the key: the same key, so the same jobs, webhook and secret. The old
    token keeps working for `grace` (while clients move), then never again."""
    key = _find(session, id_or_name)
    if key.revoked_at is not None:
        raise ValueError(f"API key {key.name!r} is revoked")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    key.previous_token_sha256 = key.token_sha256
    key.previous_token_until = datetime.now(UTC) + grace
    key.token_sha256 = hash_token(token)
    session.flush()
    return _info(key), token


def revoke_key(session: Session, id_or_name: str) -> KeyInfo:
    """Revoke the key with this id or name; KeyError when there is none."""
    key = _find(session, id_or_name)
    if key.revoked_at is None:
        key.revoked_at = datetime.now(UTC)
        session.flush()
    return _info(key)


def _find(session: Session, id_or_name: str) -> ApiKey:
    clauses = [ApiKey.name == id_or_name]
    if id_or_name.isdigit():
        clauses.append(ApiKey.id == int(id_or_name))
    key = session.scalars(select(ApiKey).where(or_(*clauses))).first()
    if key is None:
        raise KeyError(f"no API key {id_or_name!r}")
    return key


def list_keys(session: Session) -> list[KeyInfo]:
    return [_info(k) for k in session.scalars(select(ApiKey).order_by(ApiKey.id))]


def _info(key: ApiKey) -> KeyInfo:
    return KeyInfo(key.id, key.name, key.created_at, key.revoked_at)


@dataclass(frozen=True)
class WebhookConfig:
    url: str | None
    page_events: bool
    secret: str


def webhook_of(session: Session, key_id: int) -> WebhookConfig:
    """The key's default webhook and its signing secret (made on first use)."""
    key = session.get(ApiKey, key_id)
    if key is None:
        raise KeyError(f"no API key {key_id}")
    if key.webhook_secret is None:
        key.webhook_secret = new_secret()
        session.flush()
    return WebhookConfig(key.webhook_url, key.webhook_page_events, key.webhook_secret)


def rotate_webhook_secret(session: Session, key_id: int, grace: timedelta) -> WebhookConfig:
    """A new signing secret for the key's webhooks; for `grace` each webhook is signed with
    the old one too (`t=..,v1=NEW,v1=OLD`), so a receiver can switch without losing any."""
    key = session.get(ApiKey, key_id)
    if key is None:
        raise KeyError(f"no API key {key_id}")
    key.previous_webhook_secret = key.webhook_secret
    key.previous_webhook_secret_until = datetime.now(UTC) + grace if key.webhook_secret else None
    key.webhook_secret = new_secret()
    session.flush()
    return webhook_of(session, key_id)


def set_webhook(session: Session, key_id: int, url: str | None, page_events: bool) -> WebhookConfig:
    key = session.get(ApiKey, key_id)
    if key is None:
        raise KeyError(f"no API key {key_id}")
    key.webhook_url = url
    key.webhook_page_events = page_events
    session.flush()
    return webhook_of(session, key_id)
