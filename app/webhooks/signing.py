"""The signature scheme of Folio's webhooks, as Stripe's: `Folio-Signature: t=TS,v1=HEX`.

HEX is HMAC-SHA256, keyed with the API key's webhook secret, over `TS.` followed by the raw
request body; TS is the Unix time of the request. A receiver recomputes it, compares in
constant time, and refuses a TS too far from its clock (a replayed request).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

HEADER = "Folio-Signature"
SECRET_PREFIX = "whsec_"
TOLERANCE_S = 300


class BadSignature(ValueError):
    """The request is not signed with this secret, or signed too long ago."""


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The header value for `body`, signed now (or at `timestamp`)."""
    ts = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={ts},v1={digest}"


def verify(
    secret: str, header: str, body: bytes, tolerance_s: int = TOLERANCE_S, now: float | None = None
) -> int:
    """The signed timestamp when `header` signs `body` with `secret` recently enough."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    ts = parts.get("t", "")
    if not ts.isdigit() or "v1" not in parts:
        raise BadSignature("no t= and v1= in the signature header")
    if abs((time.time() if now is None else now) - int(ts)) > tolerance_s:
        raise BadSignature("the signature's timestamp is outside the tolerance")
    expected = sign(secret, body, int(ts)).split("v1=", 1)[1]
    if not hmac.compare_digest(expected, parts["v1"]):
        raise BadSignature("the signature does not match")
    return int(ts)
