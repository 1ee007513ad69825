"""Parsing the event stream of an OpenAI-compatible streaming completion."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx

from app.engines.sse import sse_chunks, sse_lines

# Characters that str.splitlines() treats as line breaks but JSON may carry raw.
AWKWARD = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\x1dh\x1ei"


async def _pieces(texts: list[str]) -> AsyncIterator[str]:
    for text in texts:
        yield text


def _collect(texts: list[str]) -> list[dict]:
    async def run() -> list[dict]:
        return [chunk async for chunk in sse_chunks(sse_lines(_pieces(texts)))]

    return asyncio.run(run())


def _event(content: str) -> str:
    payload = {"choices": [{"delta": {"content": content}, "finish_reason": None}]}
    return "data: " + json.dumps(payload, ensure_ascii=False) + "\n\n"


def test_line_separators_inside_json_strings_do_not_split_events() -> None:
    stream = _event(AWKWARD) + _event("next") + "data: [DONE]\n\n"

    chunks = _collect([stream])

    assert [c["choices"][0]["delta"]["content"] for c in chunks] == [AWKWARD, "next"]


def test_events_split_across_network_reads_and_crlf_line_ends() -> None:
    stream = (_event("héllo") + ": keep-alive comment\n\n" + _event(AWKWARD)).replace("\n", "\r\n")
    stream += "data: [DONE]\r\n\r\n" + _event("after done is ignored")
    reads = [stream[i : i + 7] for i in range(0, len(stream), 7)]

    chunks = _collect(reads)

    assert [c["choices"][0]["delta"]["content"] for c in chunks] == ["héllo", AWKWARD]


def test_httpx_response_text_feeds_the_parser() -> None:
    """The engine reads `aiter_text()`; httpx's own `aiter_lines()` would split U+2028."""
    body = (_event(AWKWARD) + "data: [DONE]\n\n").encode()
    response = httpx.Response(200, content=body)

    async def run() -> list[dict]:
        return [chunk async for chunk in sse_chunks(sse_lines(response.aiter_text()))]

    chunks = asyncio.run(run())
    assert chunks[0]["choices"][0]["delta"]["content"] == AWKWARD
