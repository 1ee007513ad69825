"""Per-arm figures of the degeneration-tax benchmark, from the recorded page runs."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from statistics import mean
from typing import Any

from app.domain import AttemptStatus
from app.report.inflation import estimate_inflation
from app.report.rows import AttemptRow, ServerSampleRow
from app.report.schema import ServerTokens
from app.report.server_tokens import endpoint_tokens
from bench.tax.run import ArmRun, AttemptRun, PageRun
from bench.tax.workload import ENDPOINT

LOOP_STEP = "greedy"


def summarize(runs: list[ArmRun]) -> dict[str, dict[str, Any]]:
    """{arm: figures}, averaged over repeats. `runs` are in the order they ran: each run is
    compared with the floor B run just before it and the one just after (their mean), so
    slow drift in the machine's load cancels out; B's own spread is its noise floor."""
    arms = list(dict.fromkeys(run.arm for run in runs))
    floors = [_neighbouring_floors(runs, index) for index in range(len(runs))]
    summary = {}
    for arm in arms:
        mine = [(run, floors[i]) for i, run in enumerate(runs) if run.arm == arm]
        summary[arm] = _summarize_arm(mine)
    return summary


def _neighbouring_floors(runs: list[ArmRun], index: int) -> list[ArmRun]:
    """The B runs closest before and after `runs[index]` (a B run is its own floor)."""
    if runs[index].arm == "B":
        return [runs[index]]
    before = [run for run in runs[:index] if run.arm == "B"][-1:]
    after = [run for run in runs[index + 1 :] if run.arm == "B"][:1]
    return before + after


def _summarize_arm(with_floors: list[tuple[ArmRun, list[ArmRun]]]) -> dict[str, Any]:
    runs = [run for run, _ in with_floors]
    walls = [run.wall_s for run in runs]
    paired = [(run, floors) for run, floors in with_floors if floors]
    inflations = [run.wall_s / _mean_of(floors, "wall_s") - 1 for run, floors in paired]
    token_inflations = [
        run.server_tokens / _mean_of(floors, "server_tokens") - 1 for run, floors in paired
    ]
    steps = [
        run.server_steps / _mean_of(floors, "server_steps") - 1
        for run, floors in paired
        if _mean_of(floors, "server_steps")
    ]
    pages = [page for run in runs for page in run.pages]
    degenerate = [page for page in pages if page.page.degenerate]
    loops = [page.attempts[0] for page in degenerate]
    with_loop, without_loop = _healthy_by_loop_overlap(runs)
    return {
        "wall_s": round(mean(walls), 2),
        "server_tokens_over_b": round(mean(token_inflations), 4) if paired else None,
        "server_tokens_per_s": round(mean(run.server_tokens / run.wall_s for run in runs), 1),
        # How the first, looping read of each degenerate page ended, and its length then.
        "loop_stops": dict(Counter(attempt.stop for attempt in loops)),
        "loop_tokens_at_stop": round(mean(a.tokens for a in loops), 1) if loops else None,
        "wall_s_per_repeat": [round(w, 2) for w in walls],
        "inflation_over_b": round(mean(inflations), 4) if inflations else None,
        "inflation_per_repeat": [round(x, 4) for x in inflations],
        "floor_wall_spread": _floor_spread(runs),
        # The same in engine steps: the batch's length were every step as long as B's. Other
        # load does not stretch steps as it stretches seconds, but a lagging client does leave
        # emptier batches and so more steps for the same tokens.
        "engine_steps": round(mean(run.server_steps for run in runs)),
        "steps_inflation_over_b": round(mean(steps), 4) if steps else None,
        "server_tokens": round(mean(run.server_tokens for run in runs)),
        "client_tokens": round(_per_run(runs, lambda a: a.tokens)),
        "loop_tokens_seen": round(_per_run(runs, _loop_tokens)),
        # Every accepted attempt's count is exact (usage); the rest of what the server
        # generated went into loops, including tokens generated after a client abort.
        "loop_tokens": round(mean(run.server_tokens for run in runs) - _per_run(runs, _kept)),
        "abort_overshoot_tokens": round(
            mean(run.server_tokens for run in runs) - _per_run(runs, lambda a: a.tokens)
        ),
        "attempts": round(_per_run(runs, lambda a: 1), 1),
        "pages_ok": round(mean(_ok_pages(run.pages) for run in runs), 1),
        "pages": len(runs[0].pages),
        "runs": len(runs),
        "degenerate_pages": round(len(degenerate) / len(runs), 1),
        # Recovered: a later attempt read the page after its loop was caught.
        "pages_recovered": round(_recovered(degenerate) / len(runs), 1),
        "healthy_flagged": round(
            sum(_first_not_ok(p) for p in pages if not p.page.degenerate) / len(runs), 1
        ),
        # What `folio report` estimates: from the attempt rows alone, and with the server's
        # counters (tokens generated that no attempt received), as it does where the endpoint
        # exposes /metrics.
        "report_inflation_estimate_rows_only": _report_estimate(runs, with_server=False),
        "report_inflation_estimate": _report_estimate(runs, with_server=True),
        # The same without the replay: busy time shared out (the method before 2026-11-25).
        "report_inflation_estimate_shares": _report_estimate(runs, True, replay=False),
        **_server_figures(runs),
        "healthy_with_loop": _durations(with_loop),
        "healthy_without_loop": _durations(without_loop),
    }


def _mean_of(runs: list[ArmRun], figure: str) -> float:
    return mean(getattr(run, figure) for run in runs)


def _floor_spread(runs: list[ArmRun]) -> float | None:
    """(slowest - fastest) / mean wall of B's runs: how far apart the same work ran."""
    if len(runs) < 2 or runs[0].arm != "B":
        return None
    walls = [run.wall_s for run in runs]
    return round((max(walls) - min(walls)) / mean(walls), 4)


def _per_run(runs: list[ArmRun], value: Any) -> float:
    return mean(sum(value(a) for p in run.pages for a in p.attempts) for run in runs)


def _loop_tokens(attempt: AttemptRun) -> int:
    """Tokens spent on an attempt that ended degenerate: wasted."""
    return attempt.tokens if attempt.status is AttemptStatus.DEGENERATE else 0


def _kept(attempt: AttemptRun) -> int:
    return 0 if attempt.status is AttemptStatus.DEGENERATE else attempt.tokens


def _ok_pages(pages: list[PageRun]) -> int:
    return sum(page.final_status is AttemptStatus.OK for page in pages)


def _recovered(pages: list[PageRun]) -> int:
    return sum(page.final_status is AttemptStatus.OK and len(page.attempts) > 1 for page in pages)


def _first_not_ok(page: PageRun) -> bool:
    return page.attempts[0].status is not AttemptStatus.OK


def _healthy_by_loop_overlap(
    runs: list[ArmRun],
) -> tuple[list[AttemptRun], list[AttemptRun]]:
    """Healthy pages' first attempts, split by whether a looping request ran beside them."""
    with_loop: list[AttemptRun] = []
    without_loop: list[AttemptRun] = []
    for run in runs:
        loops = [a for p in run.pages for a in p.attempts if a.step == LOOP_STEP]
        for page in run.pages:
            if page.page.degenerate:
                continue
            first = page.attempts[0]
            beside = any(first.start < loop.end and loop.start < first.end for loop in loops)
            (with_loop if beside else without_loop).append(first)
    return with_loop, without_loop


def _durations(attempts: list[AttemptRun]) -> dict[str, Any]:
    """Mean request duration, and mean decode time per token after the first."""
    if not attempts:
        return {"requests": 0, "mean_s": None, "ms_per_token": None}
    per_token = [
        1000 * (a.end - a.start - (a.ttft_s or 0)) / (a.tokens - 1)
        for a in attempts
        if a.tokens > 1
    ]
    return {
        "requests": len(attempts),
        "mean_s": round(mean(a.end - a.start for a in attempts), 3),
        "ms_per_token": round(mean(per_token), 2) if per_token else None,
    }


def _server_tokens(run: ArmRun) -> ServerTokens:
    """The report's server-side figures for the run: its counter readings before and after."""
    readings = [
        ServerSampleRow(ENDPOINT, "bench", "bench", phase, _clock(at), tokens)
        for phase, at, tokens in (
            ("start", run.began, 0.0),
            ("end", run.began + run.wall_s, run.server_tokens),
        )
    ]
    return endpoint_tokens(ENDPOINT, readings, _attempt_rows(run), [])


def _server_figures(runs: list[ArmRun]) -> dict[str, Any]:
    figures = [_server_tokens(run) for run in runs]
    shares = [f.degenerate_share for f in figures if f.degenerate_share is not None]
    return {
        "server_tokens_unreceived": round(mean(f.tokens_unreceived or 0 for f in figures)),
        "server_tokens_lost_aborts": round(mean(f.tokens_lost_aborts or 0 for f in figures)),
        "server_degenerate_share": round(mean(shares), 4) if shares else None,
    }


def _report_estimate(runs: list[ArmRun], with_server: bool, replay: bool = True) -> float | None:
    estimates = []
    for run in runs:
        unreceived = {ENDPOINT: _server_tokens(run).tokens_unreceived or 0.0}
        server = unreceived if with_server else None
        estimate = estimate_inflation(_attempt_rows(run), server, replay)
        estimates.append(estimate.inflation)
    known = [e for e in estimates if e is not None]
    return round(mean(known), 4) if known else None


def _attempt_rows(run: ArmRun) -> list[AttemptRow]:
    """The run's attempts as the report reads them from the database."""
    rows: list[AttemptRow] = []
    for page in run.pages:
        for attempt in page.attempts:
            rows.append(attempt_row(len(rows) + 1, page, attempt))
    return rows


def attempt_row(row_id: int, page: PageRun, attempt: AttemptRun) -> AttemptRow:
    """One attempt of a bench run as the report's row of it."""
    return AttemptRow(
        id=row_id,
        page_id=page.page.index,
        step_name=attempt.step,
        engine="vlm",
        model="tiny-qwen2vl",
        endpoint=ENDPOINT,
        status=attempt.status.value,
        started_at=_clock(attempt.start),
        ended_at=_clock(attempt.end),
        duration_s=attempt.end - attempt.start,
        completion_tokens=attempt.tokens,
        finish_reason=attempt.finish_reason,
        aborted=attempt.aborted,
        max_tokens=attempt.max_tokens,
        ttft_s=attempt.ttft_s,
    )


def _clock(monotonic: float) -> datetime:
    return datetime.fromtimestamp(monotonic, UTC)
