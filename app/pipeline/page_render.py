"""A claimed page read for its engines: its document's local copy, its text layer and sizes,
and how to rasterise it when an engine asks."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from app.db.page_path import PageWork, RenderFacts
from app.domain import PageInput
from app.pdf.render import read_page
from app.pdf.text_bounds import TextCaps
from app.pdf.textlayer import text_layer_is_usable
from app.pipeline.page_attempts import LayerJudge, page_input
from app.pipeline.text_layer import judge_layer
from app.settings import Settings
from app.storage import DocumentCache, StoredObject
from app.textlayer import GateConfig
from app.textlayer.words import languages_for


@dataclass(frozen=True)
class RenderedPage:
    """The page as engines get it, what rendering learnt of it (written with its close), and
    the text-layer gate's judgement, to take when a text-layer step runs (None: no usable
    layer)."""

    page: PageInput
    facts: RenderFacts
    judge: LayerJudge | None


class PageRenderer:
    """Reads claimed pages at the settings' DPI and size, their documents from `documents`."""

    def __init__(self, settings: Settings, documents: DocumentCache) -> None:
        self.settings = settings
        # Where pages' documents are read: local paths as they are, stored ones via a copy.
        self.documents = documents
        self.gate = GateConfig(languages_for(settings.tesseract_lang))
        self.caps = TextCaps(
            settings.textlayer_max_chars, settings.textlayer_max_lines, settings.textlayer_max_spans
        )

    def render(self, work: PageWork) -> RenderedPage:
        """The page read (its text layer and sizes) and how to rasterise it when an engine
        asks: a model that renders the page at its own size, as every VLM profile does, gets
        the page rasterised once, not also at Folio's DPI. Where the page has a usable text
        layer, the gate's judgement of it, to take when a text-layer step runs (the layout and
        the table finder cost ~60 ms a page, which a page the VLM answers never needs)."""
        started = time.perf_counter()
        dpi = int(work.options.get("dpi") or self.settings.dpi)
        path = self._local_copy(work)
        max_side = self.settings.max_image_side
        outline = read_page(path, work.number, dpi, max_side, self.caps)
        usable = text_layer_is_usable(outline.text_layer, self.settings.textlayer_min_chars)
        judge = None
        if usable:
            enforce = self.settings.textlayer_gate
            judge = partial(judge_layer, path, work.number, self.gate, enforce)
        facts = RenderFacts(outline.pixels, usable, time.perf_counter() - started)
        page = page_input(path, work.number, dpi, max_side, outline, usable)
        return RenderedPage(page, facts, judge)

    def _local_copy(self, work: PageWork) -> Path:
        """The page's document on this machine's disk (a stored one is fetched, once)."""
        stored = StoredObject(work.path, 0, work.etag)
        return self.documents.local_path(stored, work.sha256)
