"""What a job may touch, decided in one place: the object URIs it reads or writes, and the URLs
the server calls on a caller's behalf (pre-signed result PUTs, callbacks).

- An object URI is admitted when it lies under one of the allowed prefixes, compared by whole
  path segments: `s3://b/docs` admits `s3://b/docs/a.pdf`, never `s3://b/docs-private/a.pdf`.
  The API checks the request's URI, its results prefix and every line of a manifest against
  `api_allowed_uris`; `folio run` (the operator's own credentials) admits every URI.
- A URL is admitted when it is http(s), carries no credentials and its host resolves to global
  addresses only, unless private addresses are allowed (`webhooks.allow_private` for
  callbacks, `result_urls_allow_private` for result PUTs). It is checked again at each call:
  a name may resolve elsewhere later.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from app.errors import FolioError
from app.storage.base import ObjectUri, is_store_uri

NOT_ALLOWED = "not_allowed"


class PlaceRefused(FolioError, ValueError):
    """A URI outside the allowed prefixes, or a URL to an address the settings refuse."""

    category = NOT_ALLOWED


def folder_of(uri: str) -> str:
    """`uri` as a folder (ends with `/`), so that a prefix is compared by whole segments."""
    return uri if uri.endswith("/") else uri + "/"


def listing_prefix(uri: str) -> str:
    """The prefix a job over `uri` lists: a PDF's own key, else `uri` as a folder
    (`s3://b/docs` lists `docs/...`, not `docs-private/...`)."""
    where = ObjectUri.parse(uri)
    if not where.key or where.key.lower().endswith(".pdf"):
        return uri
    return folder_of(uri)


def in_listing(uri: str, prefix: str) -> bool:
    """Whether a listed object belongs to the listing of `prefix` (see `listing_prefix`)."""
    return uri.startswith(prefix) if prefix.endswith("/") else uri == prefix


@dataclass(frozen=True)
class AccessPolicy:
    """The places one job may touch. `allowed_uris` None: every URI (the operator's CLI)."""

    allowed_uris: tuple[str, ...] | None = None

    @classmethod
    def of(cls, allowed_uris: Sequence[str] | None) -> AccessPolicy:
        return cls(None if allowed_uris is None else tuple(allowed_uris))

    def admits(self, uri: str) -> bool:
        if self.allowed_uris is None:
            return True
        if not is_store_uri(uri) or _dot_segments(uri):
            return False
        folder = folder_of(uri)
        return any(folder.startswith(folder_of(a)) for a in self.allowed_uris)

    def check(self, uri: str) -> None:
        if not self.admits(uri):
            raise PlaceRefused(f"{uri} is not under any of the server's allowed URIs")


def _dot_segments(uri: str) -> bool:
    """S3 takes `in/../secret/x.pdf` as a key of its own, but a proxy or server in front of
    a store may resolve it to `secret/x.pdf`: such a key is never admitted under a prefix."""
    return any(part in (".", "..") for part in ObjectUri.parse(uri).key.split("/"))


def check_url(url: str, allow_private: bool, what: str = "URL") -> None:
    """Refuse a URL that is not http(s), carries credentials, or whose host resolves to a
    loopback, private, link-local or otherwise non-global address while `allow_private` is
    off. `what` names the URL in the message (`callback URL`, `result URL`)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PlaceRefused(f"a {what} must be http:// or https:// with a host")
    if parts.username or parts.password:
        raise PlaceRefused(f"a {what} must not carry credentials")
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        raise PlaceRefused(f"the {what}'s host does not resolve: {exc}") from exc
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if not address.is_global:
            raise PlaceRefused(f"the {what}'s host resolves to a non-public address ({address})")


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
