"""Server-sent events of an OpenAI-compatible streaming completion, as JSON chunks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any


async def sse_chunks(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """Yield each `data:` payload as a dict until `[DONE]`; comments and blanks are skipped."""
    async for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        if data:
            yield json.loads(data)
