"""How the console writes numbers, times and links (Jinja filters)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode


def usd(value: float | None) -> str:
    if value is None:
        return "–"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def num(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def seconds(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 120:
        return f"{value:.1f} s"
    return f"{value / 60:.1f} min"


def when(value: datetime | None) -> str:
    return "–" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def query(base: dict[str, Any], **changes: Any) -> str:
    """`?a=1&b=2` of `base` with `changes` (a None value drops the key)."""
    merged = {k: v for k, v in {**base, **changes}.items() if v is not None and v != ""}
    return "?" + urlencode(merged) if merged else "?"
