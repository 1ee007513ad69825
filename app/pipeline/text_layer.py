"""A page's text layer judged by the gate and, when it passes, read as Markdown."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from app.pdf.render import PageWords, read_page_layout, read_page_tables, read_page_words
from app.textlayer import GateConfig, page_markdown, rejection


@dataclass(frozen=True)
class LayerVerdict:
    markdown: str | None = None
    rejection: str | None = None
    words: PageWords = ()  # the layer's words with their boxes, for its positions


def judge_layer(path: Path, number: int, gate: GateConfig, enforce: bool) -> LayerVerdict:
    """The page's Markdown, or the gate's reason to refuse the layer (when `enforce`).

    Run only when a text-layer step runs: the layout, the words and above all the table finder
    (run only on layers the gate accepts) are read then, never for a page a model reads.
    """
    layout = read_page_layout(path, number)
    if layout is None:  # MuPDF balked at the layout: the plain layer, as it is
        return LayerVerdict(words=read_page_words(path, number))
    reason = rejection(layout, gate)
    if reason and enforce:
        return LayerVerdict(rejection=reason)
    tables = read_page_tables(path, number)
    markdown = page_markdown(replace(layout, tables=tables))
    return LayerVerdict(markdown=markdown, words=read_page_words(path, number))
