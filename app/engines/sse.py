"""Server-sent events of an OpenAI-compatible streaming completion, as JSON chunks."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any


async def sse_lines(texts: AsyncIterator[str]) -> AsyncGenerator[str, None]:
    """Lines of an event stream, split only on LF (CRLF and CR-less alike).

    Not `str.splitlines()` (nor httpx's `aiter_lines`, which uses it): that also splits on
    U+2028, U+0085, form feeds and other characters that a JSON payload may hold raw.
    """
    pending = ""
    try:
        async for text in texts:
            pending += text
            *complete, pending = pending.split("\n")
            for line in complete:
                yield line.removesuffix("\r")
        if pending:
            yield pending.removesuffix("\r")
    finally:
        # Closing the lines closes the source now, not whenever the GC finalises it.
        if (aclose := getattr(texts, "aclose", None)) is not None:
            await aclose()


async def sse_chunks(lines: AsyncIterator[str]) -> AsyncGenerator[dict[str, Any], None]:
    """Yield each `data:` payload as a dict until `[DONE]`; comments and blanks are skipped."""
    async for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        if data:
            yield json.loads(data)
