"""Which callback URLs the server may call: http(s) to global addresses, unless allowed."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit


class UrlRefused(ValueError):
    """A callback URL the settings do not allow (scheme, host, or the address it resolves to)."""


def check_url(url: str, allow_private: bool) -> None:
    """Refuse a URL that is not http(s), or whose host resolves to a loopback, private,
    link-local or otherwise non-global address while `allow_private` is off (checked again
    at each delivery: a name may resolve elsewhere later)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UrlRefused("a callback URL must be http:// or https:// with a host")
    if parts.username or parts.password:
        raise UrlRefused("a callback URL must not carry credentials")
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise UrlRefused(f"the callback host does not resolve: {exc}") from exc
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if not address.is_global:
            raise UrlRefused(f"the callback host resolves to a non-public address ({address})")
