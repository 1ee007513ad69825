"""A small HTTP/1.1 server on asyncio's protocols: the stand-in must write ~25,000 streamed
tokens a second per GPU from one core, so each write is one `transport.write` of bytes made
here, with none of an ASGI stack's per-message work. Requests are read whole (Content-Length);
a reply is a whole body or a chunked event stream; connections are kept alive."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


@dataclass
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass(eq=False)
class Connection(asyncio.Protocol):
    handle: Callable[[Connection, HttpRequest], None]
    transport: asyncio.Transport | None = None
    closed: bool = False
    streaming: bool = False
    _buffer: bytes = b""
    _on_close: list[Callable[[], None]] = field(default_factory=list)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True

    def eof_received(self) -> bool:
        # A half-close (asyncio sends one before closing) is a client leaving, as for vLLM.
        self.closed = True
        return False

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while not self.streaming and (request := self._next_request()) is not None:
            self.handle(self, request)

    def _next_request(self) -> HttpRequest | None:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = self._buffer[:end].decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        if len(self._buffer) < end + 4 + length:
            return None
        body = self._buffer[end + 4 : end + 4 + length]
        self._buffer = self._buffer[end + 4 + length :]
        method, path = [*lines[0].split(" "), "", ""][:2]
        return HttpRequest(method, path.split("?", 1)[0], headers, body)

    def reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        if self.closed or self.transport is None:
            return
        head = (
            f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
            f"content-type: {content_type}\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        self.transport.write(head.encode() + body)

    def reply_json(self, status: int, payload: Any) -> None:
        self.reply(status, json.dumps(payload).encode())

    def start_stream(self) -> None:
        self.streaming = True
        self.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
            b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
        )

    def stream_event(self, data: bytes) -> None:
        self.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        self.write(b"0\r\n\r\n")
        self.streaming = False

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)
