"""Pictures of committed benchmark results: the tax bench's arms and the detector's shapes."""

from __future__ import annotations

from statistics import fmean
from typing import Any

from docsgen import svg

WIDTH = 900
ARMS = ("A", "B-plugin", "C", "C-plugin", "C-abort", "D16", "D256", "E", "F")
LOW, HIGH = -0.10, 0.30  # the axis of "over B"


def tax_arms(validation: dict[str, Any]) -> str:
    """Wall-clock and server tokens over the floor B, per arm and regime (mean of the quick
    runs, each run a dot), from `bench/results/tax_validation.json`."""
    runs = validation["runs"]
    regimes = list(runs[0]["regimes"])
    left, plot = 110, WIDTH - 110 - 250
    body = [svg.text(10, 22, "Degeneration tax per arm, over the floor B", size=15, weight="bold")]
    y = 40.0
    for regime in regimes:
        body += [svg.text(10, y + 12, f"{regime} (mean of {len(runs)} runs)", weight="bold")]
        y += 22
        body += _zero_and_grid(left, plot, y, len(ARMS) * 26)
        for arm in ARMS:
            figures = [run["regimes"][regime][arm] for run in runs]
            body += _arm_row(arm, figures, left, plot, y)
            y += 26
        y += 30
    legend = [("wall-clock over B", svg.HEALTHY), ("server tokens over B", svg.MUTED)]
    body += svg.legend(left, y, legend)
    body.append(svg.text(WIDTH - 10, y, "bench/results/tax_validation.json", "end", 10, "normal"))
    return svg.document(WIDTH, y + 14, body, "degeneration tax per arm")


def _x(value: float, left: float, plot: float) -> float:
    clipped = min(HIGH, max(LOW, value))
    return left + plot * (clipped - LOW) / (HIGH - LOW)


def _zero_and_grid(left: float, plot: float, top: float, height: float) -> list[str]:
    body = []
    for tick in (-0.1, 0.0, 0.1, 0.2, 0.3):
        x = _x(tick, left, plot)
        body.append(svg.line(x, top - 4, x, top + height, "#ccc" if tick else svg.INK, "2,3"))
        body.append(svg.text(x, top + height + 12, f"{tick:+.0%}", "middle", size=10))
    return body


def _arm_row(arm: str, figures: list[dict[str, Any]], left: float, plot: float, y: float) -> list:
    wall = fmean(f["inflation_over_b"] for f in figures)
    tokens = fmean(f["server_tokens_over_b"] for f in figures)
    zero = _x(0.0, left, plot)
    body = [svg.text(left - 8, y + 13, arm, "end", weight="bold" if arm == "F" else "normal")]
    for value, colour, dy in ((wall, svg.HEALTHY, 2), (tokens, svg.MUTED, 12)):
        x = _x(value, left, plot)
        body.append(svg.rect(min(x, zero), y + dy, abs(x - zero), 9, colour, f"{value:+.1%}"))
    for f in figures:
        body.append(
            f'<circle cx="{_x(f["inflation_over_b"], left, plot):.1f}" cy="{y + 6.5:.1f}" '
            'r="2.2" fill="#123"/>'
        )
    label = f"{wall:+.1%} wall ({_runs(figures)}), {tokens:+.1%} tokens"
    body.append(svg.text(left + plot + 12, y + 14, label, size=10))
    return body


def _runs(figures: list[dict[str, Any]]) -> str:
    return " ".join(f"{f['inflation_over_b'] * 100:+.0f}" for f in figures)


COLUMNS = (
    ("online_recall", "online"),
    ("within_bound", "within 3p+64"),
    ("cap_recall", "at the cap"),
)


def detector_shapes(detector: dict[str, Any]) -> str:
    """The per-shape table of `python -m bench detector` as a coloured grid."""
    shapes = detector["devset"]["shapes"]
    left, cell, row = 300, 120, 26
    body = [svg.text(10, 22, "Loops the detector catches, per shape", size=15, weight="bold")]
    header_y = 50
    for i, (_, title) in enumerate(COLUMNS):
        body.append(svg.text(left + i * cell + cell / 2, header_y, title, "middle", weight="bold"))
    body.append(svg.text(left + 3 * cell + 70, header_y, "latency p50 / max", "middle", 12, "bold"))
    y = header_y + 10
    for shape in shapes:
        body.append(svg.text(10, y + 17, shape["shape"].replace("_", " ")))
        for i, (key, _) in enumerate(COLUMNS):
            value = shape[key]
            body.append(svg.rect(left + i * cell + 2, y + 2, cell - 4, row - 4, svg.shade(value)))
            body.append(svg.text(left + i * cell + cell / 2, y + 17, f"{value:.2f}", "middle"))
        latency = f"{shape['latency_periods_median']:.1f} / {shape['latency_periods_max']:.1f}"
        body.append(svg.text(left + 3 * cell + 70, y + 17, latency + " periods", "middle"))
        y += row
    when = detector.get("machine", {}).get("when", "")[:10]
    note = f"python -m bench detector, {when}: {shapes[0]['samples']} loops a shape"
    body.append(svg.text(WIDTH - 10, y + 20, note, "end", 10))
    return svg.document(WIDTH, y + 30, body, "detector recall per loop shape")
