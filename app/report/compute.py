"""The report's figures, computed from plain rows (no database, no HTTP, no PDF objects)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from app.domain import AttemptStatus, DocumentStatus, PageStatus
from app.report.cost import COST_ATTRIBUTION, AttemptCost, attempt_costs
from app.report.fallback_worth import fallback_worth
from app.report.inflation import INFLATION_METHOD, estimate_inflation, wall_seconds
from app.report.pricing import Pricing
from app.report.rows import CONFIRM, FALSE_ALARM, AttemptRow, JobRows, PageRow
from app.report.schema import (
    DegenerateAttempt,
    ModelFigures,
    OutcomeFigures,
    Report,
    ServerTokens,
    SlowPage,
)
from app.report.server_tokens import loop_stops_with_tokens, server_tokens
from app.report.timeline import DEGENERATE, split_healthy


@dataclass(frozen=True)
class JobReport:
    """The report together with the rows and per-attempt costs it was computed from."""

    report: Report
    rows: JobRows
    costs: dict[int, AttemptCost]

    def page_attempts(self) -> dict[int, list[AttemptRow]]:
        return attempts_by_page(self.rows.attempts)


def attempts_by_page(attempts: list[AttemptRow]) -> dict[int, list[AttemptRow]]:
    """Each page's attempts in the order they were made."""
    grouped: dict[int, list[AttemptRow]] = defaultdict(list)
    for a in sorted(attempts, key=lambda a: a.id):
        grouped[a.page_id].append(a)
    return dict(grouped)


def compute_report(
    rows: JobRows,
    pricing: Pricing,
    *,
    slowest: int = 10,
    listed: int = 200,
    tail_chars: int = 400,
) -> JobReport:
    """The report of `rows`: `slowest` pages and up to `listed` degenerate attempts named,
    each with the last `tail_chars` characters of its output."""
    costs = attempt_costs(rows.attempts, rows.neighbours, pricing)
    by_page = attempts_by_page(rows.attempts)
    servers = server_tokens(rows.server_samples, rows.attempts, rows.neighbours)
    report = Report(
        job_id=rows.job_id,
        plan=rows.plan,
        job_status=rows.status,
        **_page_figures(rows, by_page),
        **_token_figures(rows.attempts),
        **_time_figures(rows, servers),
        **_server_figures(servers),
        **_cost_figures(rows, costs),
        by_outcome=_by_outcome(rows.attempts, costs),
        per_model=_per_model(rows.attempts, costs),
        server_endpoints=servers,
        loop_stops=loop_stops_with_tokens(rows.loop_stops, servers),
        slowest_pages=_slowest_pages(rows.pages, by_page, slowest),
        degenerate_pages=_degenerate_attempts(rows, tail_chars, listed),
        fallback_worth=fallback_worth(rows.pages, by_page),
        cost_attribution=COST_ATTRIBUTION,
        inflation_method=INFLATION_METHOD,
    )
    return JobReport(report, rows, costs)


def _ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _page_figures(rows: JobRows, by_page: dict[int, list[AttemptRow]]) -> dict[str, Any]:
    counts = Counter(p.status for p in rows.pages)
    tried = [by_page[p.id] for p in rows.pages if by_page.get(p.id)]
    recovered: Counter[str] = Counter(
        p.final_step or by_page[p.id][-1].step_name
        for p in rows.pages
        if p.status == PageStatus.FALLBACK and by_page.get(p.id)
    )
    terminal = (
        counts[PageStatus.SUCCEEDED] + counts[PageStatus.FALLBACK] + counts[PageStatus.FAILED]
    )
    return {
        "documents_total": len(rows.documents),
        "documents_failed": sum(d.status == DocumentStatus.FAILED for d in rows.documents),
        "pages_total": len(rows.pages),
        "pages_succeeded": counts[PageStatus.SUCCEEDED],
        "pages_fallback": counts[PageStatus.FALLBACK],
        "pages_failed": counts[PageStatus.FAILED],
        "pages_open": len(rows.pages) - terminal,
        "degeneration_rate_first_attempt": _ratio(
            sum(a[0].status == DEGENERATE for a in tried), len(tried)
        ),
        "degeneration_rate_final": _ratio(
            sum(a[-1].status == DEGENERATE for a in tried), len(tried)
        ),
        "recovered_by": dict(sorted(recovered.items())),
    }


def _token_figures(attempts: list[AttemptRow]) -> dict[str, Any]:
    degenerate = [a for a in attempts if a.status == DEGENERATE]
    false_alarms = [a for a in attempts if a.status == FALSE_ALARM]
    confirming = [a for a in attempts if a.role == CONFIRM]
    return {
        "attempts_total": len(attempts),
        "degenerate_attempts": len(degenerate),
        "invalid_attempts": sum(a.status == AttemptStatus.INVALID for a in attempts),
        "false_alarm_attempts": len(false_alarms),
        "false_alarm_pages": len({a.page_id for a in false_alarms}),
        "confirming_attempts": len(confirming),
        "loops_confirmed": sum(a.status == DEGENERATE for a in confirming),
        "verdicts_overruled": sum(a.overruled or 0 for a in attempts),
        "pages_overruled": len({a.page_id for a in attempts if a.overruled}),
        "verdict_reads": sum(a.read_cpu_ms is not None for a in attempts),
        "verdict_read_cpu_s": round(sum(a.read_cpu_ms or 0 for a in attempts) / 1000, 3),
        "tokens_prompt": sum(a.prompt_tokens or 0 for a in attempts),
        "tokens_generated": sum(a.completion_tokens or 0 for a in attempts),
        "tokens_degenerate": sum(a.completion_tokens or 0 for a in degenerate),
        "tokens_saved_by_abort": sum(a.unused_cap for a in attempts),
        "tokens_false_alarm": sum(a.completion_tokens or 0 for a in false_alarms),
        "tokens_confirming": sum(a.completion_tokens or 0 for a in confirming),
        "attempts_tokens_estimated": sum(a.tokens_estimated for a in attempts),
    }


def _time_figures(rows: JobRows, servers: list[ServerTokens]) -> dict[str, Any]:
    attempts = rows.attempts
    engine = sum(a.duration_s for a in attempts)
    degenerate = sum(a.duration_s for a in attempts if a.status == DEGENERATE)
    unreceived = {s.endpoint: s.tokens_unreceived or 0.0 for s in servers}
    estimate = estimate_inflation(attempts, unreceived)
    job_seconds = None
    if rows.started_at and rows.finished_at:
        job_seconds = (rows.finished_at - rows.started_at).total_seconds()
    return {
        "engine_seconds": engine,
        "engine_seconds_degenerate": degenerate,
        "wall_seconds": wall_seconds(attempts),
        "job_seconds": job_seconds,
        "degeneration_share_of_engine_time": _ratio(degenerate, engine),
        "counterfactual_wall_seconds": estimate.counterfactual_wall_s,
        "inflation_estimate": estimate.inflation,
        "inflation_unknown_reason": estimate.reason,
        "healthy_slowdown_with_concurrent_degenerate": split_healthy(attempts).slowdown,
    }


def _server_figures(servers: list[ServerTokens]) -> dict[str, Any]:
    """Job totals over the endpoints whose servers' counters were read."""
    known = [s for s in servers if s.tokens_generated is not None]
    reasons = [f"{s.endpoint}: {s.reason}" for s in servers if s.reason]
    if not known:
        return {
            "server_tokens_generated": None,
            "server_tokens_unreceived": None,
            "server_tokens_lost_aborts": None,
            "server_degenerate_share": None,
            "server_tokens_reason": "; ".join(reasons) or "no VLM endpoint used",
        }
    generated = sum(s.tokens_generated or 0.0 for s in known)
    degenerate = sum((s.degenerate_share or 0.0) * (s.tokens_generated or 0.0) for s in known)
    return {
        "server_tokens_generated": generated,
        "server_tokens_unreceived": sum(s.tokens_unreceived or 0.0 for s in known),
        "server_tokens_lost_aborts": sum(s.tokens_lost_aborts or 0.0 for s in known),
        "server_degenerate_share": degenerate / generated if generated > 0 else None,
        "server_tokens_reason": "; ".join(reasons) or None,
    }


def _cost_figures(rows: JobRows, costs: dict[int, AttemptCost]) -> dict[str, Any]:
    total = sum(c.total for c in costs.values())
    saved = 0.0
    for a in rows.attempts:
        if a.completion_tokens and a.unused_cap:
            saved += a.unused_cap * costs[a.id].total / a.completion_tokens
    return {
        "attempts_unpriced": sum(not c.priced for c in costs.values()),
        "cost_usd": total,
        "cost_usd_degenerate": sum(
            costs[a.id].total for a in rows.attempts if a.status == DEGENERATE
        ),
        "cost_usd_saved_by_abort_estimate": saved,
        "cost_per_1k_pages": 1000 * total / len(rows.pages) if rows.pages else None,
    }


def _by_outcome(
    attempts: list[AttemptRow], costs: dict[int, AttemptCost]
) -> dict[str, OutcomeFigures]:
    groups: dict[str, list[AttemptRow]] = defaultdict(list)
    for a in attempts:
        groups[a.status].append(a)
    return {
        status: OutcomeFigures(
            attempts=len(group),
            tokens_prompt=sum(a.prompt_tokens or 0 for a in group),
            tokens_generated=sum(a.completion_tokens or 0 for a in group),
            engine_seconds=sum(a.duration_s for a in group),
            cost_usd=sum(costs[a.id].total for a in group),
        )
        for status, group in sorted(groups.items())
    }


def _per_model(attempts: list[AttemptRow], costs: dict[int, AttemptCost]) -> list[ModelFigures]:
    groups: dict[tuple[str, str | None, str | None], list[AttemptRow]] = defaultdict(list)
    for a in attempts:
        groups[(a.engine, a.model, a.endpoint)].append(a)
    table = []
    for (engine, model, endpoint), group in groups.items():
        degenerate = [a for a in group if a.status == DEGENERATE]
        table.append(
            ModelFigures(
                engine=engine,
                model=model,
                endpoint=endpoint,
                attempts=len(group),
                degenerate_attempts=len(degenerate),
                tokens_prompt=sum(a.prompt_tokens or 0 for a in group),
                tokens_generated=sum(a.completion_tokens or 0 for a in group),
                engine_seconds=sum(a.duration_s for a in group),
                cost_usd=sum(costs[a.id].total for a in group),
                cost_usd_degenerate=sum(costs[a.id].total for a in degenerate),
            )
        )
    return sorted(table, key=lambda m: (-m.cost_usd, -m.engine_seconds, m.engine, m.model or ""))


def _slowest_pages(
    pages: list[PageRow], by_page: dict[int, list[AttemptRow]], top: int
) -> list[SlowPage]:
    rows = [
        SlowPage(
            p.document, p.number, p.status, len(atts), sum(a.duration_s for a in atts), p.final_step
        )
        for p in pages
        if (atts := by_page.get(p.id))
    ]
    rows.sort(key=lambda s: (-s.engine_seconds, s.document, s.page))
    return rows[:top]


def _degenerate_attempts(rows: JobRows, tail_chars: int, limit: int) -> list[DegenerateAttempt]:
    pages = {p.id: p for p in rows.pages}
    listed = []
    for a in sorted(rows.attempts, key=lambda a: a.id):
        if a.status != DEGENERATE or a.page_id not in pages:
            continue
        page = pages[a.page_id]
        text = a.output_tail or ""
        tail = text if len(text) <= tail_chars else "…" + text[-tail_chars:]
        listed.append(
            DegenerateAttempt(
                page.document,
                page.number,
                a.id,
                a.step_name,
                a.model,
                a.verdict_kind,
                a.verdict_period,
                a.completion_tokens,
                a.aborted,
                tail,
            )
        )
    listed.sort(key=lambda d: (d.document, d.page, d.attempt_id))
    return listed[:limit]
