"""The PDF's own text layer: judged for plausibility, and turned into structured Markdown.

Pure: it sees plain values (`PageLayout`) that the PDF seam (`app.pdf.layout`) reads.
"""

from __future__ import annotations

from app.textlayer.gate import GateConfig, rejection
from app.textlayer.markdown import page_markdown
from app.textlayer.model import PageLayout

__all__ = ["GateConfig", "PageLayout", "page_markdown", "rejection"]
