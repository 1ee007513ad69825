"""The report's pictures as inline SVG strings: no scripts, no fonts, no network."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from statistics import fmean, median, quantiles

from app.report.rows import AttemptRow
from app.report.timeline import HealthySplit, submission_order

STATUS_COLOURS = {
    "ok": "#3b7dd8",
    "degenerate": "#d62728",
    "empty": "#9a9a9a",
    "error": "#ff7f0e",
    "transport_error": "#8c564b",
    "rejected": "#bcbd22",
    "false_alarm": "#9467bd",
}
WIDTH = 900
LEFT = 70
RIGHT = 20
MAX_BARS = 5000


def _svg(svg_id: str, height: float, body: list[str], label: str) -> str:
    return (
        f'<svg id="{svg_id}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{escape(label)}" width="{WIDTH}" height="{height:.0f}" '
        f'viewBox="0 0 {WIDTH} {height:.0f}">' + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, content: str, anchor: str = "start", size: int = 11) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">'
        f"{escape(content)}</text>"
    )


def _line(x1: float, y1: float, x2: float, y2: float, style: str = 'stroke="#333"') -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" {style}/>'


def timeline_svg(attempts: Sequence[AttemptRow], pages: dict[int, str]) -> str:
    """One bar per attempt from start to end, in submission order; degenerate ones in red."""
    ordered = submission_order(attempts)[:MAX_BARS]
    if not ordered:
        return _svg("chart-timeline", 40, [_text(LEFT, 24, "no attempts")], "request timeline")
    origin = ordered[0].start
    span = max(a.end for a in ordered) - origin or 1.0
    bar = max(1.0, min(14.0, 600 / len(ordered)))
    top, plot = 10.0, WIDTH - LEFT - RIGHT
    height = top + bar * len(ordered) + 30

    def x(t: float) -> float:
        return LEFT + plot * (t - origin) / span

    body = []
    for i, a in enumerate(ordered):
        colour = STATUS_COLOURS.get(a.status, "#555")
        tip = f"{pages.get(a.page_id, '?')} {a.step_name} {a.status} {a.end - a.start:.2f} s"
        body.append(
            f'<rect class="attempt {escape(a.status)}" x="{x(a.start):.2f}" '
            f'y="{top + i * bar:.2f}" width="{max(0.5, x(a.end) - x(a.start)):.2f}" '
            f'height="{max(0.8, bar - 0.3):.2f}" fill="{colour}">'
            f"<title>{escape(tip)}</title></rect>"
        )
    axis_y = top + bar * len(ordered) + 14
    for k in range(5):
        t = span * k / 4
        body.append(_text(x(origin + t), axis_y, f"{t:.1f} s", "middle"))
    body.append(_text(4, top + 10, "attempts", size=10))
    return _svg("chart-timeline", height, body, "request timeline")


def box_plot_svg(split: HealthySplit) -> str:
    """Healthy durations with and without a degenerate attempt running beside them."""
    groups = [
        ("with a concurrent degenerate attempt", split.with_degenerate),
        ("without", split.without_degenerate),
    ]
    height, top, plot_h = 220.0, 20.0, 150.0
    highest = max([*split.with_degenerate, *split.without_degenerate, 1e-9])

    def y(v: float) -> float:
        return top + plot_h * (1 - v / highest)

    body = [_line(LEFT, y(0), WIDTH - RIGHT, y(0), 'stroke="#888"')]
    body += [_text(LEFT - 6, y(v) + 4, f"{v:.1f} s", "end") for v in (0.0, highest / 2, highest)]
    for i, (label, values) in enumerate(groups):
        centre = LEFT + (WIDTH - LEFT - RIGHT) * (0.25 + 0.5 * i)
        body.append(_text(centre, height - 24, f"{label} (n={len(values)})", "middle"))
        if values:
            body.append(_text(centre, height - 10, f"mean {fmean(values):.2f} s", "middle"))
            body += _box(centre, values, y)
        else:
            body.append(_text(centre, y(highest / 2), "no attempts", "middle"))
    return _svg("chart-slowdown", height, body, "healthy attempt durations")


def _box(centre: float, values: list[float], y: Callable[[float], float]) -> list[str]:
    q1, _, q3 = quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    lo, hi, mid, half = min(values), max(values), median(values), 40
    return [
        _line(centre, y(lo), centre, y(hi)),
        _line(centre - 15, y(lo), centre + 15, y(lo)),
        _line(centre - 15, y(hi), centre + 15, y(hi)),
        f'<rect x="{centre - half}" y="{y(q3):.1f}" width="{2 * half}" '
        f'height="{max(1.0, y(q1) - y(q3)):.1f}" fill="#cfe0f7" stroke="#3b7dd8"/>',
        _line(centre - half, y(mid), centre + half, y(mid), 'stroke="#1f3f7a" stroke-width="2"'),
    ]


def bar_chart_svg(
    svg_id: str, title: str, items: list[tuple[str, float]], fmt: Callable[[float], str]
) -> str:
    """Horizontal bars, one per outcome, coloured like the timeline."""
    row, top = 24.0, 24.0
    height = top + row * max(1, len(items)) + 10
    body = [_text(4, 14, title, size=12)]
    highest = max([v for _, v in items] + [1e-12])
    plot = WIDTH - LEFT - RIGHT - 120
    for i, (label, value) in enumerate(items):
        y = top + i * row
        colour = STATUS_COLOURS.get(label, "#555")
        width = plot * value / highest
        body.append(_text(LEFT + 40, y + 15, label, "end"))
        body.append(
            f'<rect x="{LEFT + 46}" y="{y + 3:.1f}" width="{width:.1f}" height="{row - 8}" '
            f'fill="{colour}"><title>{escape(label)}: {escape(fmt(value))}</title></rect>'
        )
        body.append(_text(LEFT + 52 + width, y + 15, fmt(value)))
    if not items:
        body.append(_text(LEFT, top + 15, "no attempts"))
    return _svg(svg_id, height, body, title)
