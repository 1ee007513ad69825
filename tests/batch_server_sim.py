"""A step-by-step model of a batching server (vLLM's decode loop), for timelines whose
counterfactual is known exactly: simulate the batch with loops, then without.

Each step, the requests holding a batch slot (at most `slots`, first come first served) each
produce one token; a step takes `step_s + per_seq_s * running` seconds. Client lanes send
their pages one after another, each after `gap_s` of client-side work.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from app.report.rows import AttemptRow

T0 = datetime(2026, 1, 5, 10, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Request:
    page: int
    tokens: int
    status: str = "ok"


@dataclass(frozen=True)
class Server:
    slots: int = 8
    step_s: float = 0.01
    per_seq_s: float = 0.001


def simulate(
    pages: list[list[Request]],
    lanes: int,
    server: Server,
    gap_s: float = 0.0,
    endpoint: str = "gpu",
) -> list[AttemptRow]:
    """The attempt rows of a batch of `pages` (each a list of attempts made one after another)
    sent by `lanes` client workers, each taking the next page when it is free."""
    now = 0.0
    waiting = deque(pages)
    pending: list[deque[Request]] = [deque() for _ in range(lanes)]
    ready_at = [0.0] * lanes  # when each lane sends its next request
    queue: deque[tuple[int, Request, float]] = deque()  # (lane, request, sent at)
    running: list[list] = []  # [lane, request, sent at, tokens left, first token at]
    rows: list[AttemptRow] = []
    while waiting or any(pending) or queue or running:
        for lane, requests in enumerate(pending):
            if ready_at[lane] > now or _busy(lane, queue, running):
                continue
            if not requests and waiting:
                requests.extend(waiting.popleft())
            if requests:
                queue.append((lane, requests.popleft(), now))
        while queue and len(running) < server.slots:
            lane, request, sent = queue.popleft()
            running.append([lane, request, sent, request.tokens, None])
        if not running:
            now = min(t for t in ready_at if t > now)
            continue
        now += server.step_s + server.per_seq_s * len(running)
        for item in running:
            item[3] -= 1
            item[4] = now if item[4] is None else item[4]
        for lane, request, sent, _left, first in [item for item in running if item[3] == 0]:
            rows.append(_row(len(rows) + 1, request, sent, now, endpoint, first - sent))
            ready_at[lane] = now + gap_s
        running = [item for item in running if item[3] > 0]
    return rows


def _busy(lane: int, queue: deque, running: list[list]) -> bool:
    return any(q[0] == lane for q in queue) or any(r[0] == lane for r in running)


def _row(
    number: int, request: Request, start: float, end: float, endpoint: str, ttft: float
) -> AttemptRow:
    return AttemptRow(
        id=number,
        page_id=request.page,
        step_name="greedy",
        engine="vlm",
        model="m",
        endpoint=endpoint,
        status=request.status,
        started_at=T0 + timedelta(seconds=start),
        ended_at=T0 + timedelta(seconds=end),
        duration_s=end - start,
        completion_tokens=request.tokens,
        ttft_s=ttft,
    )


def wall(rows: list[AttemptRow]) -> float:
    return max(r.end for r in rows) - min(r.start for r in rows)
