"""Which callback URLs the server may call: the one check of app/storage/access.py."""

from __future__ import annotations

from app.storage.access import PlaceRefused
from app.storage.access import check_url as _check_url

UrlRefused = PlaceRefused  # the name the webhook code and its tests know


def check_url(url: str, allow_private: bool) -> None:
    """Refuse a callback URL the settings do not allow (scheme, credentials, or an address
    that is not global while `allow_private` is off); checked again at each delivery."""
    _check_url(url, allow_private, "callback URL")
