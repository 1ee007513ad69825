"""A rendered page's text layer judged by the gate and, when it passes, read as Markdown."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from app.pdf.render import RenderedPage, read_page_tables
from app.textlayer import GateConfig, page_markdown, rejection


@dataclass(frozen=True)
class LayerVerdict:
    markdown: str | None = None
    rejection: str | None = None


def judge_layer(
    path: Path, number: int, rendered: RenderedPage, gate: GateConfig, enforce: bool
) -> LayerVerdict:
    """The page's Markdown, or the gate's reason to refuse the layer (when `enforce`).

    The table finder runs only on layers the gate accepts: it is the costly part.
    """
    if rendered.layout is None:
        return LayerVerdict()
    reason = rejection(rendered.layout, gate)
    if reason and enforce:
        return LayerVerdict(rejection=reason)
    tables = read_page_tables(path, number)
    return LayerVerdict(markdown=page_markdown(replace(rendered.layout, tables=tables)))
