"""Console tables of the degeneration-tax benchmark (rich), from its results dictionary."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def results_table(summary: dict[str, dict[str, Any]], regime: str = "") -> Table:
    title = "Degeneration tax (means over repeats; vs the B runs before and after each)"
    table = Table(title=f"{title}: {regime}" if regime else title)
    headers = (
        "arm",
        "wall s",
        "wall\nvs B",
        "tokens\n(server)",
        "tokens\nvs B",
        "report\nestimate",
        "steps\nvs B",
        "tokens/s\n(server)",
        "loop tokens\nat stop",
        "after\nstop",
        "loops\nrecovered",
        "healthy\nflagged",
        "stops (first read of each loop)",
    )
    for header in headers:
        table.add_column(header, justify="right")
    for key, arm in summary.items():
        stops = ", ".join(f"{name} {count}" for name, count in sorted(arm["loop_stops"].items()))
        table.add_row(
            key,
            f"{arm['wall_s']:.1f}",
            _pct(arm["inflation_over_b"]),
            f"{arm['server_tokens']:,}",
            _pct(arm["server_tokens_over_b"]),
            _pct(arm["report_inflation_estimate"]),
            _pct(arm.get("steps_inflation_over_b")),
            f"{arm['server_tokens_per_s']:,.0f}",
            _num(arm["loop_tokens_at_stop"], 0),
            f"{arm['abort_overshoot_tokens']:,}",
            f"{arm['pages_recovered']:g}/{arm['degenerate_pages']:g}",
            f"{arm['healthy_flagged']:g}",
            stops or "-",
        )
    return table


def shape_table(sweep: dict[str, Any]) -> Table:
    """Per loop shape and arm: tokens read before the stop, and which stop (see _caught)."""
    table = Table(title=f"Loop shapes: tokens before the stop (cap {sweep['max_tokens']})")
    table.add_column("shape (source)")
    table.add_column("period\nchars", justify="right")
    for key in sweep["arms"]:
        table.add_column(key, justify="right")
    for index, shape in enumerate(sweep["shapes"]):
        cells = [_caught(arm, index) for arm in sweep["arms"].values()]
        table.add_row(f"{shape['name']} ({shape['source']})", str(shape["period_chars"]), *cells)
    overshoot = [f"{arm['overshoot_tokens']:,}" for arm in sweep["arms"].values()]
    table.add_row("tokens generated after the stops", "", *overshoot)
    return table


STOP_CODES = {  # Folio's stop_mechanism values, shortened
    "client_close": "close",
    "engine_plugin": "plugin",
    "abort_call": "abort",
    "server_repetition": "rd",
    "none": "at cap",
}


def _caught(arm: dict[str, Any], index: int) -> str:
    """'137 rd': caught after 137 tokens by repetition_detection; 'at cap': judged a loop
    only once it had run to the cap; '-': never flagged."""
    if not arm["caught"][index]:
        return "-"
    stop = STOP_CODES.get(arm["stops"][index], arm["stops"][index])
    return stop if stop == "at cap" else f"{arm['tokens'][index]} {stop}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
