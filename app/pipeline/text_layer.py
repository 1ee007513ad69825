"""A page's text layer judged by the gate and, when it passes, read as Markdown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from app.pdf.render import PageWords, read_page_layout, read_page_tables, read_page_words
from app.textlayer import GateConfig, page_markdown, rejection


@dataclass(frozen=True)
class LayerVerdict:
    markdown: str | None = None
    rejection: str | None = None
    words: PageWords = ()  # the layer's words with their boxes, for its positions


STOPPED = LayerVerdict(rejection="stopped")  # the page was stopped (cancel, time budget)


def judge_layer(
    path: Path,
    number: int,
    gate: GateConfig,
    enforce: bool,
    should_stop: Callable[[], bool] = lambda: False,
) -> LayerVerdict:
    """The page's Markdown, or the gate's reason to refuse the layer (when `enforce`).

    Run only when a text-layer step runs: the layout, the words and above all the table finder
    (run only on layers the gate accepts) are read then, never for a page a model reads.
    `should_stop` is asked between the stages (each bounded by the text-layer caps), so a
    cancelled page or one past its time budget leaves the rest unread.
    """
    layout = read_page_layout(path, number)
    if should_stop():
        return STOPPED
    if layout is None:  # MuPDF balked at the layout: the plain layer, as it is
        return LayerVerdict(words=read_page_words(path, number))
    reason = rejection(layout, gate)
    if reason and enforce:
        return LayerVerdict(rejection=reason)
    tables = read_page_tables(path, number)
    if should_stop():
        return STOPPED
    markdown = page_markdown(replace(layout, tables=tables))
    if should_stop():
        return STOPPED
    return LayerVerdict(markdown=markdown, words=read_page_words(path, number))
