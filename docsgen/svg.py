"""A few SVG primitives for the documentation's pictures: plain strings, no fonts or scripts,
so a picture is a small text file that diffs and renders anywhere (GitHub, MkDocs, a browser)."""

from __future__ import annotations

from html import escape

FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif"'
HEALTHY = "#3b7dd8"
LOOP = "#d62728"
MUTED = "#9a9a9a"
INK = "#222"


def document(width: float, height: float, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(title)}" {FONT}>'
        f"<title>{escape(title)}</title>"
        f'<rect width="100%" height="100%" fill="#fff"/>' + "".join(body) + "</svg>\n"
    )


def rect(x: float, y: float, w: float, h: float, fill: str, tip: str = "") -> str:
    inner = f"<title>{escape(tip)}</title>" if tip else ""
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" height="{h:.1f}" '
        f'fill="{fill}">{inner}</rect>'
    )


def text(
    x: float,
    y: float,
    content: str,
    anchor: str = "start",
    size: int = 12,
    weight: str = "normal",
    fill: str = INK,
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'font-weight="{weight}" fill="{fill}">{escape(content)}</text>'
    )


def line(x1: float, y1: float, x2: float, y2: float, colour: str = INK, dash: str = "") -> str:
    style = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}"{style}/>'
    )


def legend(x: float, y: float, items: list[tuple[str, str]]) -> list[str]:
    body: list[str] = []
    for label, colour in items:
        body += [rect(x, y - 10, 12, 12, colour), text(x + 17, y, label)]
        x += 30 + 7 * len(label)
    return body


def shade(value: float) -> str:
    """A cell colour for a rate in [0, 1]: red at 0, amber at 0.5, green at 1."""
    value = min(1.0, max(0.0, value))
    red = (214, 39, 40)
    amber = (255, 191, 0)
    green = (44, 160, 44)
    low, high, t = (red, amber, value * 2) if value < 0.5 else (amber, green, value * 2 - 1)
    r, g, b = (round(a + (b - a) * t) for a, b in zip(low, high, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"
