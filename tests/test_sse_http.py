"""The worker's streaming reader over real sockets: framing cut anywhere, errors, closing.

A small asyncio server writes replies byte for byte as scripted, in the pieces given, so
chunk-size lines and payloads split across reads are exercised for real.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from app.engines.sse_http import post_sse
from app.errors import TransportError

Reply = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def chunked(*events: str) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(e.encode()), e.encode()) for e in events)
    return body + b"0\r\n\r\n"


async def with_server(reply: Reply, client: Callable[[str], Awaitable[object]]) -> object:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await reply(reader, writer)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        return await client(f"http://127.0.0.1:{port}/v1/chat/completions")


def in_pieces(data: bytes, size: int) -> Reply:
    async def reply(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for start in range(0, len(data), size):
            writer.write(data[start : start + size])
            await writer.drain()
            await asyncio.sleep(0.001)

    return reply


async def read_all(url: str) -> tuple[int, str]:
    response = await post_sse(url, {"stream": True}, {"Authorization": "Bearer k"}, 5, 5)
    try:
        text = "".join([piece async for piece in response.texts(5)])
    finally:
        await response.close()
    return response.status, text


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
EVENTS = ('data: {"a": "Straße ✓ 表"}\n\n', 'data: {"b": 2}\n\n', "data: [DONE]\n\n")


@pytest.mark.parametrize("size", [1, 3, 7, 64, 4096])
def test_the_body_is_read_whole_however_the_bytes_are_cut(size: int) -> None:
    reply = in_pieces(HEAD + chunked(*EVENTS), size)

    status, text = asyncio.run(with_server(reply, read_all))  # type: ignore[misc]

    assert (status, text) == (200, "".join(EVENTS))


def test_a_content_length_reply_is_read_to_its_length() -> None:
    body = b'{"error": "bad image"}'
    head = b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n" % len(body)

    async def client(url: str) -> tuple[int, str]:
        response = await post_sse(url, {}, {}, 5, 5)
        try:
            return response.status, await response.read_text(5)
        finally:
            await response.close()

    status, text = asyncio.run(with_server(in_pieces(head + body, 5), client))  # type: ignore[misc]

    assert (status, text) == (400, '{"error": "bad image"}')


def test_a_reply_cut_mid_stream_is_a_transport_error() -> None:
    cut = HEAD + chunked(*EVENTS)[:40]

    with pytest.raises(TransportError, match="closed the stream"):
        asyncio.run(with_server(in_pieces(cut, 16), read_all))


def test_nobody_listening_is_a_transport_error() -> None:
    async def client() -> object:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        return await post_sse(f"http://127.0.0.1:{port}/v1/x", {}, {}, 5, 5)

    with pytest.raises(TransportError):
        asyncio.run(client())


def test_closing_mid_stream_is_seen_by_the_server() -> None:
    seen: list[bytes] = []

    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(HEAD + b"%x\r\n%s\r\n" % (len(EVENTS[0].encode()), EVENTS[0].encode()))
        await writer.drain()
        # read() returns at end of file only: the request's body, then the client's close.
        seen.append(await asyncio.wait_for(reader.read(), 5))

    async def client(url: str) -> str:
        response = await post_sse(url, {}, {}, 5, 5)
        texts = response.texts(5)
        first = await anext(texts)
        await texts.aclose()
        await response.close()
        return first

    first = asyncio.run(with_server(reply, client))  # type: ignore[arg-type]

    assert first == EVENTS[0]
    assert seen == [b"{}"]
