"""The PDF's own text layer as an engine: exact and instant for born-digital pages.

A layer the quality gate refused is an attempt too, `rejected` with its reason, so the page's
history says why it went on to OCR.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.domain import AttemptStatus, EngineResult, PageInput
from app.positions.model import Placed, lines_of, positions_json
from app.settings import PlanStep


class TextLayerEngine:
    name = "textlayer"

    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        started = datetime.now(UTC)
        if page.text_layer_rejection:
            return EngineResult(
                text="",
                status=AttemptStatus.REJECTED,
                started_at=started,
                ended_at=datetime.now(UTC),
                error=f"textlayer_rejected: {page.text_layer_rejection}",
            )
        markdown = page.text_layer_markdown
        text = (page.text_layer if markdown is None else markdown).strip()
        status = AttemptStatus.OK if text else AttemptStatus.EMPTY
        return EngineResult(
            text=text,
            status=status,
            started_at=started,
            ended_at=datetime.now(UTC),
            positions=_positions(page) if text else None,
        )

    def close(self) -> None:
        return None


def _positions(page: PageInput) -> dict[str, Any] | None:
    """The layer's words and lines, read in PDF points."""
    if page.geometry is None or not page.text_layer_words:
        return None
    words = [Placed(w[4], (w[0], w[1], w[2], w[3]), w[5]) for w in page.text_layer_words]
    return positions_json("textlayer", page.geometry, words, lines_of(words), "pt")
