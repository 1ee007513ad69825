"""The validation's figures as rows and markdown tables (docs/benchmarks.md's columns)."""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

FLOOR = "B"


def error_rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run, regime and arm (B, the reference, left out): measured against
    estimated inflation, and the error in points (estimate - measured)."""
    rows = []
    for run in runs:
        for regime, summary in run["regimes"].items():
            floor = summary[FLOOR]
            for arm, figures in summary.items():
                if arm == FLOOR:
                    continue
                rows.append(_row(run, regime, arm, figures, floor))
    return rows


def _row(
    run: dict[str, Any], regime: str, arm: str, figures: dict[str, Any], floor: dict[str, Any]
) -> dict[str, Any]:
    measured, estimate = figures["inflation_over_b"], figures["report_inflation_estimate"]
    steps = figures.get("steps_inflation_over_b")
    error = None if measured is None or estimate is None else 100 * (estimate - measured)
    shares = figures.get("report_inflation_estimate_shares")
    shares_error = None if measured is None or shares is None else 100 * (shares - measured)
    return {
        "run": run["run"],
        "load_average_1min": run["load_average_1min"],
        "regime": regime,
        "arm": arm,
        "wall_s": figures["wall_s"],
        "floor_wall_s": floor["wall_s"],
        "floor_wall_spread": floor.get("floor_wall_spread"),
        "measured": measured,
        "server_tokens_over_b": figures["server_tokens_over_b"],
        "steps_over_b": steps,
        "estimate_rows_only": figures["report_inflation_estimate_rows_only"],
        "estimate": estimate,
        "error_points": None if error is None else round(error, 1),
        "estimate_shares": shares,
        "error_shares_points": None if shares_error is None else round(shares_error, 1),
        "error_vs_steps_points": (
            None if estimate is None or steps is None else round(100 * (estimate - steps), 1)
        ),
    }


def arm_summary(rows: list[dict[str, Any]], target: float) -> list[dict[str, Any]]:
    """Per regime and arm over the runs: mean (bias) and mean absolute error, the worst one,
    and how many rows are within `target` points; the same against engine steps."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["regime"], row["arm"])].append(row)
    summary = []
    for (regime, arm), group in groups.items():
        errors = [r["error_points"] for r in group if r["error_points"] is not None]
        steps = [
            r["error_vs_steps_points"] for r in group if r["error_vs_steps_points"] is not None
        ]
        summary.append(
            {
                "regime": regime,
                "arm": arm,
                "rows": len(group),
                "mean_error_points": _round(mean(errors)) if errors else None,
                "mean_abs_error_points": _round(mean(map(abs, errors))) if errors else None,
                "worst_error_points": max(errors, key=abs) if errors else None,
                "within_target": sum(abs(e) <= target for e in errors),
                "within_target_shares": sum(
                    abs(r["error_shares_points"]) <= target
                    for r in group
                    if r.get("error_shares_points") is not None
                ),
                "mean_error_vs_steps_points": _round(mean(steps)) if steps else None,
            }
        )
    return summary


def floor_rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The floor's own walls per run and regime: the same work, run several times."""
    return [
        {
            "run": run["run"],
            "regime": regime,
            "walls_s": summary[FLOOR]["wall_s_per_repeat"],
            "spread": summary[FLOOR].get("floor_wall_spread"),
        }
        for run in runs
        for regime, summary in run["regimes"].items()
    ]


def markdown(report: dict[str, Any]) -> str:
    target = report["target_points"]
    lines = [
        "| run | load avg, start/end | regime | arm | wall s (B) | measured: wall over B "
        "| server tokens over B | engine steps over B | report estimate, rows only "
        "| report estimate with server counters | error, points | within "
        f"{target:g} |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        load = "/".join(f"{x:.2f}" for x in r["load_average_1min"])
        within = "-" if r["error_points"] is None else _yes(abs(r["error_points"]) <= target)
        lines.append(
            f"| {r['run']} | {load} | {r['regime']} | {r['arm']} "
            f"| {r['wall_s']:.1f} ({r['floor_wall_s']:.1f}) | {_pct(r['measured'])} "
            f"| {_pct(r['server_tokens_over_b'])} | {_pct(r['steps_over_b'])} "
            f"| {_pct(r['estimate_rows_only'])} | {_pct(r['estimate'])} "
            f"| {_points(r['error_points'])} | {within} |"
        )
    lines += [
        "",
        "| regime | arm | runs | mean error, points | mean abs error | worst | within "
        f"{target:g} | mean error against engine steps | within {target:g}, busy time "
        "shared out (no replay) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in report["by_arm"]:
        lines.append(
            f"| {s['regime']} | {s['arm']} | {s['rows']} | {_points(s['mean_error_points'])} "
            f"| {_num(s['mean_abs_error_points'])} | {_points(s['worst_error_points'])} "
            f"| {s['within_target']}/{s['rows']} | {_points(s['mean_error_vs_steps_points'])} "
            f"| {s.get('within_target_shares', '-')}/{s['rows']} |"
        )
    lines += [
        "",
        "| run | regime | floor B's walls, s | spread (max - min) / mean |",
        "|---|---|---|---|",
    ]
    for f in report["floor"]:
        walls = ", ".join(f"{w:.1f}" for w in f["walls_s"])
        spread = "-" if f["spread"] is None else f"{f['spread']:.1%}"
        lines.append(f"| {f['run']} | {f['regime']} | {walls} | {spread} |")
    return "\n".join(lines)


def stops_markdown(runs: list[dict[str, Any]], regime: str) -> str:
    """Per arm over the runs of one regime: what each stop cost against the floor (means, and
    per run in brackets), the tokens generated after the stops, loops recovered, healthy pages
    flagged and which stop ended each loop's first read."""
    lines = [
        "| arm | wall vs B | server tokens (vs B) | loop tokens at stop | generated after the "
        "stop | loops recovered | healthy flagged | stops |",
        "|---|---|---|---|---|---|---|---|",
    ]
    summaries = [run["regimes"][regime] for run in runs if regime in run["regimes"]]
    for arm in summaries[0] if summaries else []:
        figures = [summary[arm] for summary in summaries if arm in summary]
        walls = [f["inflation_over_b"] for f in figures if f["inflation_over_b"] is not None]
        over_b = [f["server_tokens_over_b"] for f in figures]
        stops: dict[str, int] = defaultdict(int)
        for f in figures:
            for stop, count in f["loop_stops"].items():
                stops[stop] += count
        loops = sum(round(f["degenerate_pages"]) for f in figures)
        healthy = sum(f["pages"] - round(f["degenerate_pages"]) for f in figures)
        per_run = ", ".join(f"{100 * w:+.0f}" for w in walls)
        lines.append(
            f"| {arm} | {_pct(mean(walls)) if walls else '-'} ({per_run}) "
            f"| {mean(f['server_tokens'] for f in figures):,.0f} ({_pct(mean(over_b))}) "
            f"| {mean(f['loop_tokens_at_stop'] for f in figures):.0f} "
            f"| {', '.join(str(round(f['abort_overshoot_tokens'])) for f in figures)} "
            f"| {sum(round(f['pages_recovered']) for f in figures)}/{loops} "
            f"| {sum(round(f['healthy_flagged']) for f in figures)}/{healthy} "
            f"| {', '.join(f'{k} {v}' for k, v in sorted(stops.items()))} |"
        )
    return "\n".join(lines)


def _round(value: float) -> float:
    return round(value, 1)


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
