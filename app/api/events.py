"""Server-Sent Events and long polls over a job's feed: the HTTP side of `app.progress`."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable

from fastapi.concurrency import run_in_threadpool

from app.api import schemas
from app.progress.feed import JobEvent, JobFeed

KEEPALIVE_S = 15.0  # a comment line, so proxies do not close an idle stream
ENDED = ("done", "cancelled")


def format_sse(event: JobEvent) -> str:
    data = json.dumps(event.data, separators=(",", ":"), default=str)
    return f"id: {event.id}\nevent: {event.kind}\ndata: {data}\n\n"


async def sse_stream(feed: JobFeed, poll_s: float) -> AsyncIterator[str]:
    """The feed's events as they come, until the job's end event."""
    yield "retry: 2000\n\n"
    quiet_since = time.monotonic()
    while True:
        events = await run_in_threadpool(feed.poll)
        for event in events:
            yield format_sse(event)
        if feed.ended:
            return
        if events:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= KEEPALIVE_S:
            quiet_since = time.monotonic()
            yield ": keep-alive\n\n"
        await asyncio.sleep(poll_s)


async def wait_for_end(
    read: Callable[[], schemas.JobOut], wait_s: float, poll_s: float
) -> schemas.JobOut:
    """The job as soon as it is done or cancelled, or as it is when `wait_s` runs out."""
    deadline = time.monotonic() + wait_s
    while True:
        job = await run_in_threadpool(read)
        left = deadline - time.monotonic()
        if job.status in ENDED or left <= 0:
            return job
        await asyncio.sleep(min(poll_s, left))
