"""The report as CSV: one row per page, or with `per_attempt` one row per attempt."""

from __future__ import annotations

import csv
import io
from typing import Any

from app.report.compute import JobReport
from app.report.rows import FALSE_ALARM
from app.report.timeline import DEGENERATE

PAGE_COLUMNS = (
    "job_id",
    "document",
    "page",
    "status",
    "final_step",
    "failure_category",
    "attempts",
    "degenerate_attempts",
    "engine_seconds",
    "tokens_prompt",
    "tokens_generated",
    "cost_usd",
    "false_alarm_attempts",
)
ATTEMPT_COLUMNS = (
    "job_id",
    "document",
    "page",
    "attempt_id",
    "step",
    "engine",
    "model",
    "endpoint",
    "status",
    "started_at",
    "ended_at",
    "duration_s",
    "prompt_tokens",
    "completion_tokens",
    "tokens_estimated",
    "max_tokens",
    "finish_reason",
    "aborted",
    "stop_mechanism",
    "tokens_after_verdict",
    "verdict_kind",
    "verdict_period",
    "cost_usd",
    "role",
)


def render_csv(job: JobReport, *, per_attempt: bool = False) -> str:
    buffer = io.StringIO()
    columns = ATTEMPT_COLUMNS if per_attempt else PAGE_COLUMNS
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_attempt_rows(job) if per_attempt else _page_rows(job))
    return buffer.getvalue()


def _page_rows(job: JobReport) -> list[dict[str, Any]]:
    by_page = job.page_attempts()
    rows = []
    for page in job.rows.pages:
        attempts = by_page.get(page.id, [])
        rows.append(
            {
                "job_id": job.rows.job_id,
                "document": page.document,
                "page": page.number,
                "status": page.status,
                "final_step": page.final_step or "",
                "failure_category": page.failure_category or "",
                "attempts": len(attempts),
                "degenerate_attempts": sum(a.status == DEGENERATE for a in attempts),
                "engine_seconds": round(sum(a.duration_s for a in attempts), 6),
                "tokens_prompt": sum(a.prompt_tokens or 0 for a in attempts),
                "tokens_generated": sum(a.completion_tokens or 0 for a in attempts),
                "cost_usd": round(sum(job.costs[a.id].total for a in attempts), 9),
                "false_alarm_attempts": sum(a.status == FALSE_ALARM for a in attempts),
            }
        )
    return rows


def _attempt_rows(job: JobReport) -> list[dict[str, Any]]:
    by_page = job.page_attempts()
    rows = []
    for page in job.rows.pages:
        for a in by_page.get(page.id, []):
            rows.append(
                {
                    "job_id": job.rows.job_id,
                    "document": page.document,
                    "page": page.number,
                    "attempt_id": a.id,
                    "step": a.step_name,
                    "engine": a.engine,
                    "model": a.model or "",
                    "endpoint": a.endpoint or "",
                    "status": a.status,
                    "started_at": a.started_at.isoformat(),
                    "ended_at": a.ended_at.isoformat(),
                    "duration_s": round(a.duration_s, 6),
                    "prompt_tokens": "" if a.prompt_tokens is None else a.prompt_tokens,
                    "completion_tokens": "" if a.completion_tokens is None else a.completion_tokens,
                    "tokens_estimated": a.tokens_estimated,
                    "max_tokens": "" if a.max_tokens is None else a.max_tokens,
                    "finish_reason": a.finish_reason or "",
                    "aborted": a.aborted,
                    "stop_mechanism": a.stop_mechanism or "",
                    "tokens_after_verdict": (
                        "" if a.tokens_after_verdict is None else a.tokens_after_verdict
                    ),
                    "verdict_kind": a.verdict_kind or "",
                    "verdict_period": "" if a.verdict_period is None else a.verdict_period,
                    "cost_usd": round(job.costs[a.id].total, 9),
                    "role": a.role or "",
                }
            )
    return rows
