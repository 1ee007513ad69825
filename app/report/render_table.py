"""The report as Rich tables for the terminal (`folio run` prints them after its summary)."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table

from app.report.fallback_worth import WORTH_COLUMNS, WORTH_NOTE, worth_cells
from app.report.fit import FittedTable
from app.report.format import (
    MODEL_COLUMNS,
    model_cells,
    pct,
    ratio,
    seconds,
    server_tokens_text,
    usd,
)
from app.report.schema import Report

SLOWEST_SHOWN = 5
# Columns a narrow terminal drops first (after empty ones), least useful first.
MODEL_DROP_ORDER = ("endpoint", "seconds", "tokens", "model", "cost")
SLOWEST_DROP_ORDER = ("final step", "status", "attempts")
WORTH_DROP_ORDER = ("table rows", "CER, truth", "word F1, model's answer")


def report_tables(report: Report) -> list[RenderableType]:
    """The report for a terminal: figures, then (when there are attempts) models and slow pages."""
    tables: list[RenderableType] = [FittedTable(_figures(report))]
    if report.per_model:
        tables.append(FittedTable(_per_model(report), MODEL_DROP_ORDER))
    if report.slowest_pages:
        tables.append(FittedTable(_slowest(report), SLOWEST_DROP_ORDER))
    if report.fallback_worth:
        tables.append(FittedTable(_fallback_worth(report), WORTH_DROP_ORDER))
    return tables


def _fallback_worth(r: Report) -> Table:
    table = Table(title="Pages read by an embedded reader, and what its text is worth")
    for column in WORTH_COLUMNS:
        table.add_column(column, justify="left" if column == "reader" else "right")
    for worth in r.fallback_worth:
        table.add_row(*worth_cells(worth))
    table.caption = WORTH_NOTE
    return table


def _figures(r: Report) -> Table:
    table = Table(title=f"Cost and degeneration, job {r.job_id}", show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value")
    recovered = ", ".join(f"{k} {v}" for k, v in r.recovered_by.items()) or "none"
    slowdown = r.healthy_slowdown_with_concurrent_degenerate
    rows = [
        (
            "pages",
            f"{r.pages_total}: {r.pages_succeeded} ok, {r.pages_fallback} by fallback, "
            f"{r.pages_failed} failed",
        ),
        (
            "attempts",
            f"{r.attempts_total} ({r.degenerate_attempts} degenerate, "
            f"{r.invalid_attempts} invalid, {r.false_alarm_attempts} false alarms, "
            f"{r.confirming_attempts} confirming, {r.loops_confirmed} confirmed the loop)",
        ),
        (
            "false alarms",
            f"{r.false_alarm_pages} pages kept the model's answer after a loop verdict "
            f"proved wrong (not counted as degenerate); confirming cost "
            f"{r.tokens_confirming:,} tokens; {r.verdicts_overruled} verdicts on "
            f"{r.pages_overruled} pages overruled by the page's own text; "
            f"{r.verdict_reads} scans read at a verdict ({r.verdict_read_cpu_s:,.1f} CPU-s)",
        ),
        (
            "degenerate pages",
            f"{pct(r.degeneration_rate_first_attempt)} at first attempt, "
            f"{pct(r.degeneration_rate_final)} in the end",
        ),
        ("recovered by", recovered),
        (
            "tokens",
            f"{r.tokens_prompt:,} prompt, {r.tokens_generated:,} generated, "
            f"{r.tokens_degenerate:,} degenerate, {r.tokens_saved_by_abort:,} saved by abort",
        ),
        (
            "engine time",
            f"{seconds(r.engine_seconds)} ({pct(r.degeneration_share_of_engine_time)} degenerate)",
        ),
        (
            "wall-clock",
            f"{seconds(r.wall_seconds)}; inflation by degeneration {pct(r.inflation_estimate)}"
            + (f" ({r.inflation_unknown_reason})" if r.inflation_unknown_reason else ""),
        ),
        ("server tokens", server_tokens_text(r)),
        ("healthy slowdown beside a loop", ratio(slowdown)),
        (
            "cost",
            f"{usd(r.cost_usd)} ({usd(r.cost_usd_degenerate)} degenerate, "
            f"{usd(r.cost_per_1k_pages)} per 1k pages, ~{usd(r.cost_usd_saved_by_abort_estimate)} "
            "saved by abort)",
        ),
    ]
    for name, value in rows:
        table.add_row(name, value)
    if r.attempts_unpriced:
        table.caption = f"{r.attempts_unpriced} attempts have no price configured"
    return table


def _per_model(r: Report) -> Table:
    table = Table(title="By model")
    for column in MODEL_COLUMNS:
        table.add_column(
            column, justify="left" if column in ("engine", "model", "endpoint") else "right"
        )
    for m in r.per_model:
        table.add_row(*model_cells(m))
    return table


def _slowest(r: Report) -> Table:
    table = Table(title="Slowest pages")
    for column in ("document", "page", "status", "attempts", "seconds", "final step"):
        table.add_column(
            column, justify="right" if column in ("page", "attempts", "seconds") else "left"
        )
    for p in r.slowest_pages[:SLOWEST_SHOWN]:
        table.add_row(
            p.document,
            str(p.page),
            p.status,
            str(p.attempts),
            f"{p.engine_seconds:,.2f}",
            p.final_step or "",
        )
    return table
