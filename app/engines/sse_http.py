"""One streamed chat completion over a plain asyncio connection: a GPU worker's hot path.

A GPU server streams ~32,000 tokens a second, one event per token, and a worker reads them
all. Read through httpx, ~70% of the worker's CPU per event went to its streaming stack
(httpcore, h11, and a timeout scope per read: `python -m bench stops --gpu-rates`). This does
only what a streamed completion needs: one HTTP/1.1 POST on its own connection (closed at the
end, or at a verdict, which is how vLLM learns to abort the request), the status and headers,
then the body's text as it arrives, de-chunked and decoded. Plain HTTP and HTTPS, through
the proxy the environment names (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, as
httpx reads them: `proxy_env`). Probes, abort calls and `/metrics` keep using httpx, so both
take the same path.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import contextlib
import json
import ssl
from collections.abc import AsyncGenerator, Mapping
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from app.engines.proxy_env import proxy_for
from app.errors import EngineError, TransportError

_READ = 1 << 16
_ERROR_BODY = 1 << 16  # bytes of an error reply kept for its message


class SseResponse:
    """The reply to one streamed POST: its status, then its body's text."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self.status = 0
        self.headers: dict[str, str] = {}

    async def read_head(self, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            head = await self._reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise TransportError(f"not an HTTP reply: {lines[0][:80]!r}")
        self.status = int(parts[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name:
                self.headers[name.strip().lower()] = value.strip()

    async def texts(self, timeout: float) -> AsyncGenerator[str, None]:
        """The body as text, piece by piece as it arrives (`timeout`: per read)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        async for data in self._body(timeout):
            text = decoder.decode(data)
            if text:
                yield text
        if tail := decoder.decode(b"", final=True):
            yield tail

    async def read_text(self, timeout: float) -> str:
        """The whole (error) body, at most _ERROR_BODY bytes of it."""
        kept = b""
        async for data in self._body(timeout):
            kept += data
            if len(kept) >= _ERROR_BODY:
                break
        return kept[:_ERROR_BODY].decode("utf-8", "replace")

    async def _body(self, timeout: float) -> AsyncGenerator[bytes, None]:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            async for data in self._dechunked(timeout):
                yield data
            return
        left = int(self.headers.get("content-length", "-1"))
        while left != 0:
            data = await self._read(timeout)
            if not data:
                return
            if left > 0:
                data, left = data[:left], max(0, left - len(data))
            yield data

    async def _dechunked(self, timeout: float) -> AsyncGenerator[bytes, None]:
        buffer = b""
        while True:
            end = buffer.find(b"\r\n")
            while end < 0:
                buffer += await self._more(timeout)
                end = buffer.find(b"\r\n")
            size = int(buffer[:end].split(b";", 1)[0], 16)
            if size == 0:
                return
            start = end + 2
            while len(buffer) < start + size + 2:
                buffer += await self._more(timeout)
            yield buffer[start : start + size]
            buffer = buffer[start + size + 2 :]

    async def _more(self, timeout: float) -> bytes:
        data = await self._read(timeout)
        if not data:
            raise TransportError("the server closed the stream mid-reply")
        return data

    async def _read(self, timeout: float) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(_READ)
        except (OSError, TimeoutError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        """Close the connection: a server still streaming sees the client leave."""
        self._writer.close()
        with contextlib.suppress(OSError, TimeoutError):
            await asyncio.wait_for(self._writer.wait_closed(), 5.0)


async def post_sse(
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    connect_timeout: float,
    read_timeout: float,
) -> SseResponse:
    """Send `body` as JSON to `url` on a new connection; the reply with its head read.

    Through the proxy the environment names for `url`, as httpx chooses it (`proxy_env`):
    plain HTTP in absolute form, HTTPS through a CONNECT tunnel."""
    parts = urlsplit(url)
    proxy = proxy_for(url)
    target = f"{parts.path or '/'}{'?' + parts.query if parts.query else ''}"
    extra: dict[str, str] = {}
    if proxy and parts.scheme == "http":
        target = f"http://{parts.netloc}{target}"  # absolute form: the proxy forwards it
        extra = _proxy_authorization(proxy)
    payload = json.dumps(body).encode()
    request = [
        f"POST {target} HTTP/1.1",
        f"Host: {parts.netloc}",
        "Content-Type: application/json",
        "Accept: text/event-stream",
        f"Content-Length: {len(payload)}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in {**headers, **extra}.items()),
    ]
    try:
        async with asyncio.timeout(connect_timeout):
            reader, writer = await _connect(parts, proxy)
        writer.write("\r\n".join(request).encode("latin-1") + b"\r\n\r\n" + payload)
        await writer.drain()
        response = SseResponse(reader, writer)
        await response.read_head(read_timeout)
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
        raise TransportError(f"{type(exc).__name__}: {exc}") from exc
    return response


async def _connect(
    parts: SplitResult, proxy: str | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the server at `parts`, directly or through `proxy`."""
    secure = parts.scheme == "https"
    host = parts.hostname or "localhost"
    port = parts.port or (443 if secure else 80)
    if proxy is None:
        context = ssl.create_default_context() if secure else None
        return await asyncio.open_connection(host, port, ssl=context)
    via = urlsplit(proxy)
    if via.scheme not in ("http", "https"):
        raise EngineError(f"proxy {via.scheme}:// is not supported by the stream reader")
    reader, writer = await asyncio.open_connection(
        via.hostname,
        via.port or (443 if via.scheme == "https" else 80),
        ssl=ssl.create_default_context() if via.scheme == "https" else None,
    )
    if secure:  # a tunnel to the server, then TLS with the server through it
        connect = [f"CONNECT {host}:{port} HTTP/1.1", f"Host: {host}:{port}"]
        connect += [f"{k}: {v}" for k, v in _proxy_authorization(proxy).items()]
        writer.write("\r\n".join(connect).encode("latin-1") + b"\r\n\r\n")
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1:2]
        if status != [b"200"]:
            writer.close()
            raise TransportError(f"proxy refused CONNECT: {head[:80]!r}")
        await writer.start_tls(ssl.create_default_context(), server_hostname=host)
    return reader, writer


def _proxy_authorization(proxy: str) -> dict[str, str]:
    via = urlsplit(proxy)
    if via.username is None:
        return {}
    secret = f"{unquote(via.username)}:{unquote(via.password or '')}".encode()
    return {"Proxy-Authorization": "Basic " + base64.b64encode(secret).decode()}
