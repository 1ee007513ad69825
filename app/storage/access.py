"""What a job may touch, decided in one place: the object URIs it reads or writes, and the URLs
the server calls on a caller's behalf (pre-signed result PUTs, callbacks).

- An object URI is admitted when it lies under one of the allowed prefixes, compared by whole
  path segments: `s3://b/docs` admits `s3://b/docs/a.pdf`, never `s3://b/docs-private/a.pdf`.
  The API checks the request's URI, its results prefix and every line of a manifest against
  `api_allowed_uris`; `folio run` (the operator's own credentials) admits every URI.
- A URL is admitted when it is http(s), carries no credentials and its host resolves to global
  addresses only, unless private addresses are allowed (`webhooks.allow_private` for
  callbacks, `result_urls_allow_private` for result PUTs). It is checked again at each call,
  and the call connects to the address it checked (`app/outbound/`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.errors import NOT_ALLOWED, PlaceRefused
from app.outbound.urls import check_url, check_urls, resolve_url
from app.storage.base import ObjectUri, is_store_uri

__all__ = [  # the URL checks live with the calls they guard, and are this policy's too
    "NOT_ALLOWED",
    "AccessPolicy",
    "PlaceRefused",
    "check_url",
    "check_urls",
    "folder_of",
    "in_listing",
    "listing_prefix",
    "resolve_url",
]


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
