"""Which URLs the server may call on a caller's behalf (pre-signed result PUTs, callbacks):
http(s), no credentials, and a host that resolves to global addresses only unless private
addresses are allowed (`webhooks.allow_private` for callbacks, `result_urls_allow_private`
for result PUTs). The policy of app/storage/access.py for URLs; checked again at each call,
where the addresses it resolved are the ones connected to (`calls.py`)."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from urllib.parse import SplitResult, urlsplit

from app.errors import PlaceRefused
from app.outbound import addresses
from app.outbound.addresses import IpAddress


def check_url(url: str, allow_private: bool, what: str = "URL") -> None:
    """Refuse a URL that is not http(s), carries credentials, or whose host resolves to a
    loopback, private, link-local or otherwise non-global address (NAT64 and 6to4 forms of one
    included: `app/outbound/addresses.py`) while `allow_private` is off. `what` names the URL
    in the message (`callback URL`, `result URL`)."""
    parts = _checked_parts(url, what)
    if not allow_private:
        _resolved(parts, allow_private, what)


def resolve_url(url: str, allow_private: bool, what: str = "URL") -> list[IpAddress]:
    """`check_url`, and the addresses the host resolved to: a call connects to one of these,
    so the name is not resolved a second time (to somewhere else) between check and connect."""
    return _resolved(_checked_parts(url, what), allow_private, what)


def _checked_parts(url: str, what: str) -> SplitResult:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PlaceRefused(f"a {what} must be http:// or https:// with a host")
    if parts.username or parts.password:
        raise PlaceRefused(f"a {what} must not carry credentials")
    return parts


def _resolved(parts: SplitResult, allow_private: bool, what: str) -> list[IpAddress]:
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        raise PlaceRefused(f"the {what}'s host does not resolve: {exc}") from exc
    found = [addresses.parse(str(info[4][0])) for info in infos]
    for address in found:
        if not allow_private and not addresses.is_public(address):
            raise PlaceRefused(f"the {what}'s host resolves to a non-public address ({address})")
    return found


def check_urls(urls: Mapping[str, str], allow_private: bool, what: str = "URL") -> None:
    """`check_url` for each of a job's named URLs, one look per scheme and host (10,000
    pre-signed URLs into one bucket cost one DNS lookup); the refusal names the URL:
    `['a.md']: a result URL must ...`."""
    checked: set[tuple[str, str]] = set()
    for name, url in urls.items():
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) in checked:
            continue
        try:
            check_url(url, allow_private, what)
        except PlaceRefused as exc:
            raise PlaceRefused(f"[{name!r}]: {exc}") from exc
        checked.add((parts.scheme, parts.netloc))
