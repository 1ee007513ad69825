"""What the servers generated for a job, from its readings and the attempts' token counts.

Per endpoint, readings from one server instance (same URL and process start time) are merged:
the window runs from the earliest start reading to the latest end reading of any worker, and the
server generated `last - first` tokens in it. Readings of distinct instances (one server per
worker behind the same address) are summed. Overlapping jobs: the tokens other jobs' attempts
received on the endpoint inside the window (by the share of each attempt's interval that lies
in it) are taken out, and what no attempt received is split between the jobs in proportion to
the tokens each received, so overlapping jobs' figures add up instead of counting twice.
Unreceived tokens, up to what this job's aborted attempts left under their caps, are lost
aborts: degenerate work the client never saw. The tokens of Folio's own close-liveness probes
(recorded on the attempt whose call ran one) are counted apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.domain import AttemptStatus
from app.report.rows import AttemptRow, ServerSampleRow
from app.report.schema import ServerTokens

NO_READINGS = "no server readings (metrics_url off, or no VLM page processed)"


@dataclass(frozen=True)
class _Window:
    start: datetime
    end: datetime
    tokens: float


def server_tokens(
    samples: Sequence[ServerSampleRow],
    attempts: Sequence[AttemptRow],
    neighbours: Sequence[AttemptRow] = (),
) -> list[ServerTokens]:
    """Figures for every endpoint this job's attempts used or its workers read."""
    names = {a.endpoint for a in attempts if a.endpoint} | {s.endpoint for s in samples}
    return [
        endpoint_tokens(
            name,
            [s for s in samples if s.endpoint == name],
            [a for a in attempts if a.endpoint == name],
            [a for a in neighbours if a.endpoint == name],
        )
        for name in sorted(names)
    ]


def endpoint_tokens(
    name: str,
    samples: Sequence[ServerSampleRow],
    attempts: Sequence[AttemptRow],
    neighbours: Sequence[AttemptRow],
) -> ServerTokens:
    received = sum(a.completion_tokens or 0 for a in attempts)
    url = samples[0].metrics_url if samples else None
    windows, reason = _windows(samples)
    if reason is not None:
        return ServerTokens(name, url, None, received, None, None, None, None, 0, reason)
    window_tokens = sum(w.tokens for w in windows)
    others = sum(_inside(a, windows) * (a.completion_tokens or 0) for a in neighbours)
    probes = float(sum(a.probe_tokens or 0 for a in attempts))  # Folio's close probes
    unreceived = max(0.0, window_tokens - received - others - probes)
    mine = received / (received + others) if received + others > 0 else 1.0
    unreceived *= mine
    generated = received + unreceived
    headroom = sum(a.unused_cap for a in attempts)
    lost = min(unreceived, headroom)
    degenerate = sum(
        a.completion_tokens or 0 for a in attempts if a.status == AttemptStatus.DEGENERATE
    )
    share = (degenerate + lost) / generated if generated > 0 else None
    return ServerTokens(
        name, url, generated, received, unreceived, lost, share, window_tokens, others, None, probes
    )


def _windows(samples: Sequence[ServerSampleRow]) -> tuple[list[_Window], str | None]:
    """One window per server instance, or the reason there is none."""
    if not samples:
        return [], NO_READINGS
    good = [s for s in samples if s.error is None and s.generation_tokens is not None]
    if not any(s.phase == "start" for s in good):
        failed = next((s.error for s in samples if s.error), None)
        return [], f"server metrics unreadable: {failed}" if failed else NO_READINGS
    instances: dict[tuple[str, float | None], list[ServerSampleRow]] = defaultdict(list)
    for s in good:
        instances[(s.metrics_url, s.server_started)].append(s)
    windows = []
    for readings in instances.values():
        starts = [s for s in readings if s.phase == "start"]
        ends = [s for s in readings if s.phase == "end"]
        if not starts or not ends:
            return [], "the server restarted during the job, or no reading after a page"
        first = min(starts, key=lambda s: s.taken_at)
        last = max(ends, key=lambda s: s.taken_at)
        tokens = (last.generation_tokens or 0.0) - (first.generation_tokens or 0.0)
        if tokens < 0:
            return [], "the server's counters went back (a restart during the job)"
        windows.append(_Window(first.taken_at, last.taken_at, tokens))
    return windows, None


def _inside(attempt: AttemptRow, windows: Sequence[_Window]) -> float:
    """The share of the attempt's interval inside the windows (taken as disjoint)."""
    span = attempt.end - attempt.start
    inside = sum(
        max(0.0, min(attempt.end, w.end.timestamp()) - max(attempt.start, w.start.timestamp()))
        for w in windows
    )
    if span <= 0:
        return 1.0 if inside > 0 else 0.0
    return min(1.0, inside / span)


def loop_stops_with_tokens(
    loop_stops: dict[str, str], servers: Sequence[ServerTokens]
) -> dict[str, str]:
    """Each endpoint's loop stop (as the attempts recorded it) with the job's evidence beside
    it: the tokens its server generated against the tokens Folio's attempts received. A close
    that does not stop the server shows as tokens no attempt received, up to the caps."""
    found = dict(loop_stops)
    for s in servers:
        if s.endpoint not in found:
            continue
        if s.tokens_generated is None:
            evidence = f"server tokens unknown: {s.reason}"
        else:
            evidence = (
                f"server generated {s.tokens_generated:,.0f} tokens, Folio received "
                f"{s.tokens_received:,} ({s.tokens_lost_aborts or 0:,.0f} after stops)"
            )
            if s.close_probe_tokens:
                evidence += f", and {s.close_probe_tokens:,.0f} for the close probe"
        found[s.endpoint] += f"; this job: {evidence}"
    return found
