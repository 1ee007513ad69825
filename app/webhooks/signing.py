"""The signature scheme of Folio's webhooks, as Stripe's: `Folio-Signature: t=TS,v1=HEX`.

HEX is HMAC-SHA256, keyed with the API key's webhook secret, over `TS.` followed by the raw
request body; TS is the Unix time of the request. A receiver recomputes it, compares in
constant time, and refuses a TS too far from its clock (a replayed request).

While a secret is being rotated the header carries one `v1=` per secret, the new one first
(`t=TS,v1=NEW,v1=OLD`), as Stripe's does: a receiver that still checks with the old secret
and one that already checks with the new both find theirs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Sequence

HEADER = "Folio-Signature"
SECRET_PREFIX = "whsec_"
TOLERANCE_S = 300


class BadSignature(ValueError):
    """The request is not signed with this secret, or signed too long ago."""


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def sign(secret: str | Sequence[str], body: bytes, timestamp: int | None = None) -> str:
    """The header value for `body`, signed now (or at `timestamp`) with the secret, or with
    each of several (a rotation's new one first)."""
    ts = int(time.time()) if timestamp is None else timestamp
    keys = [secret] if isinstance(secret, str) else list(secret)
    return ",".join([f"t={ts}"] + [f"v1={_digest(key, ts, body)}" for key in keys])


def _digest(secret: str, ts: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()


def verify(
    secret: str, header: str, body: bytes, tolerance_s: int = TOLERANCE_S, now: float | None = None
) -> int:
    """The signed timestamp when `header` signs `body` with `secret` recently enough."""
    pairs = [p.split("=", 1) for p in header.split(",") if "=" in p]
    ts = next((value for name, value in pairs if name == "t"), "")
    signatures = [value for name, value in pairs if name == "v1"]
    if not ts.isdigit() or not signatures:
        raise BadSignature("no t= and v1= in the signature header")
    if abs((time.time() if now is None else now) - int(ts)) > tolerance_s:
        raise BadSignature("the signature's timestamp is outside the tolerance")
    expected = _digest(secret, int(ts), body)
    if not any(hmac.compare_digest(expected, given) for given in signatures):
        raise BadSignature("the signature does not match")
    return int(ts)
