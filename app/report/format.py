"""How report figures read in tables and pages."""

from __future__ import annotations

import math

from app.report.schema import ModelFigures, Report


def usd(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value == 0:
        return "$0"
    if abs(value) >= 1:
        return f"${value:,.2f}"
    # Three significant digits without exponents: $0.0262, $0.0000254.
    decimals = min(10, 2 - math.floor(math.log10(abs(value))))
    return f"${value:.{decimals}f}"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f} s"


def ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


MODEL_COLUMNS = (
    "engine",
    "model",
    "endpoint",
    "attempts",
    "degenerate",
    "tokens",
    "seconds",
    "cost",
)


def model_cells(m: ModelFigures) -> list[str]:
    """One `per_model` row as the table and HTML renderings show it (MODEL_COLUMNS)."""
    return [
        m.engine,
        m.model or "",
        m.endpoint or "",
        str(m.attempts),
        str(m.degenerate_attempts),
        f"{m.tokens_generated:,}",
        f"{m.engine_seconds:,.1f}",
        usd(m.cost_usd),
    ]


def server_tokens_text(r: Report) -> str:
    """The server-side token figures in one line, or why they are unknown."""
    if r.server_tokens_generated is None:
        return f"unknown: {r.server_tokens_reason}"
    lost = r.server_tokens_lost_aborts or 0
    return (
        f"{r.server_tokens_generated:,.0f} generated, {r.server_tokens_unreceived or 0:,.0f} "
        f"received by no attempt ({lost:,.0f} lost aborts); "
        f"{pct(r.server_degenerate_share)} degenerate"
    )
