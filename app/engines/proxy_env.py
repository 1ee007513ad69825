"""Which proxy a request to a URL goes through, read from the environment as httpx reads it.

The worker's stream reader (`sse_http`) and its control client (httpx: probes, abort calls,
`/metrics`) must reach the server by the same path, or the close-liveness probe judges a path
the pages do not take. httpx (0.28, `_utils.get_environment_proxies` and `URLPattern`) takes
`http_proxy`, `https_proxy`, `all_proxy` and `no_proxy`, in either case, from
`urllib.request.getproxies()` (lower case wins; `HTTP_PROXY` is ignored under CGI), and turns
each into a pattern; the most specific pattern that matches the URL decides:

- `NO_PROXY`: `*` turns every proxy off; an entry with `://` is a pattern as written; an IPv4
  or IPv6 address, or `localhost`, matches that host exactly; any other name matches itself
  and its subdomains (`example.com` matches `www.example.com`, not `wwwexample.com`); a
  `:port` suffix matches that port only. Nothing is bypassed by default, not even 127.0.0.1.
- patterns with a port first, then longer hosts, then longer schemes.
A test (`tests/test_proxy_env.py`) checks these choices against httpx's own.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit
from urllib.request import getproxies

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class _Pattern:
    scheme: str  # "" for any
    host: str  # "" for any
    port: int | None
    regex: re.Pattern[str] | None

    @classmethod
    def parse(cls, pattern: str) -> _Pattern:
        parts = urlsplit(pattern)
        scheme = "" if parts.scheme == "all" else parts.scheme
        host = (parts.hostname or "").lower()
        host = "" if host == "*" else host
        regex = None
        if host.startswith("*."):
            regex = re.compile(f"^.+\\.{re.escape(host[2:])}$")
        elif host.startswith("*"):
            regex = re.compile(f"^(.+\\.)?{re.escape(host[1:])}$")
        elif host:
            regex = re.compile(f"^{re.escape(host)}$")
        return cls(scheme, host, _port(parts.scheme, parts.port), regex)

    def matches(self, scheme: str, host: str, port: int | None) -> bool:
        if self.scheme and self.scheme != scheme:
            return False
        if self.regex is not None and not self.regex.match(host):
            return False
        return self.port is None or self.port == port

    @property
    def priority(self) -> tuple[int, int, int]:
        return (0 if self.port is not None else 1, -len(self.host), -len(self.scheme))


def _port(scheme: str, port: int | None) -> int | None:
    return None if port == _DEFAULT_PORTS.get(scheme) else port


def environment_proxies() -> list[tuple[_Pattern, str | None]]:
    """The environment's proxy rules, most specific first (None: go direct)."""
    found = getproxies()
    mounts: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        if proxy := found.get(scheme):
            mounts[f"{scheme}://"] = proxy if "://" in proxy else f"http://{proxy}"
    for entry in (host.strip() for host in found.get("no", "").split(",")):
        if entry == "*":
            return []
        if entry:
            mounts[_bypass_pattern(entry)] = None
    rules = [(_Pattern.parse(pattern), proxy) for pattern, proxy in mounts.items()]
    return sorted(rules, key=lambda rule: rule[0].priority)


def _bypass_pattern(entry: str) -> str:
    if "://" in entry:
        return entry
    if _is_address(entry, ipaddress.IPv4Address):
        return f"all://{entry}"
    if _is_address(entry, ipaddress.IPv6Address):
        return f"all://[{entry}]"
    if entry.lower() == "localhost":
        return f"all://{entry}"
    return f"all://*{entry}"


def _is_address(entry: str, kind: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> bool:
    try:
        kind(entry.split("/")[0])
    except ValueError:
        return False
    return True


def proxy_for(url: str) -> str | None:
    """The proxy URL a request to `url` goes through, or None to connect directly."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = _port(parts.scheme, parts.port)
    for pattern, proxy in environment_proxies():
        if pattern.matches(parts.scheme, host, port):
            return proxy
    return None
