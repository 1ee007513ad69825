"""One HTTP call to a URL a caller gave, bounded by construction.

- The host is resolved once, checked (`app/storage/access.py`), and the checked address is the
  one connected to: the URL's name is kept for the `Host` header and for TLS (SNI and the
  certificate's name), so a name that resolves elsewhere a moment later changes nothing.
- The reply's body is a stranger's: at most `REPLY_CAP` bytes of it are read, then the
  connection is closed. Only the status and that head are kept.
- The whole call (resolving, connecting, sending, the reply's head) has one deadline; a
  server that answers a byte at a time inside every per-read timeout is cut off there.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from app.errors import FolioError
from app.outbound.addresses import IpAddress
from app.outbound.urls import resolve_url

REPLY_CAP = 4096  # bytes of a reply's body read; a receiver's "ok" fits, a flood does not
_RESOLVERS = 8  # threads that may wait on a slow resolver at once (each call bounded)


class CallFailed(FolioError):
    """The call did not get a whole answer: unreachable, cut off, or past its deadline."""

    category = "call_failed"


@dataclass(frozen=True)
class Reply:
    status_code: int
    head: bytes  # the body's first REPLY_CAP bytes at most
    cut: bool  # the body went on past the head; the rest was never read


@dataclass(frozen=True)
class Call:
    method: str
    url: str
    content: bytes
    headers: Mapping[str, str]
    allow_private: bool  # whether the host may resolve to a non-global address
    what: str  # how a refusal names the URL: "callback URL", "result URL"


async def call(request: Call, deadline_s: float) -> Reply:
    """Send `request`; raises PlaceRefused (the address check) or CallFailed."""
    try:
        async with asyncio.timeout(deadline_s):
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(
                _resolver(), resolve_url, request.url, request.allow_private, request.what
            )
            return await _first_that_connects(request, found, deadline_s)
    except TimeoutError as exc:
        raise CallFailed(f"no whole answer within {deadline_s:g} s") from exc
    except httpx.HTTPError as exc:
        raise CallFailed(f"{type(exc).__name__}: {exc}") from exc


def call_blocking(request: Call, deadline_s: float) -> Reply:
    """`call` from synchronous code (on a thread of its own when this one runs a loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(call(request, deadline_s))
    with ThreadPoolExecutor(1, thread_name_prefix="folio-call") as pool:
        return pool.submit(asyncio.run, call(request, deadline_s)).result()


async def _first_that_connects(request: Call, found: list[IpAddress], deadline_s: float) -> Reply:
    url = httpx.URL(request.url)
    headers = {**request.headers, "Host": url.netloc.decode("ascii")}
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    timeout = httpx.Timeout(deadline_s)
    failed: httpx.ConnectError | None = None
    async with httpx.AsyncClient(timeout=timeout, verify=_tls(), follow_redirects=False) as client:
        for address in dict.fromkeys(found):  # in the resolver's order, each once
            at = url.copy_with(host=str(address))
            try:
                return await _send(client, request, at, headers, extensions)
            except httpx.ConnectError as exc:
                failed = exc
    raise failed or CallFailed("the host resolved to no address")


async def _send(
    client: httpx.AsyncClient,
    request: Call,
    url: httpx.URL,
    headers: dict[str, str],
    extensions: dict[str, str],
) -> Reply:
    built = client.build_request(
        request.method, url, content=request.content, headers=headers, extensions=extensions
    )
    response = await client.send(built, stream=True)
    try:
        head = bytearray()
        async for chunk in response.aiter_raw():  # raw: a compressed flood is not inflated
            head += chunk
            if len(head) > REPLY_CAP:
                return Reply(response.status_code, bytes(head[:REPLY_CAP]), True)
        return Reply(response.status_code, bytes(head), False)
    finally:
        await response.aclose()  # an unread rest closes the connection, it is not drained


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default context, made once (loading the CA bundle costs ~21 ms of CPU)."""
    return httpx.create_ssl_context()


@functools.cache
def _resolver() -> ThreadPoolExecutor:
    """Name lookups run here, not on the loop's default executor: `asyncio.run` waits for
    that one's threads as it ends, and a lookup that hangs would outlive the deadline."""
    return ThreadPoolExecutor(_RESOLVERS, thread_name_prefix="folio-resolve")
