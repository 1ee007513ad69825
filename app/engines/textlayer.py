"""The PDF's own text layer as an engine: exact and instant for born-digital pages.

A layer the quality gate refused is an attempt too, `rejected` with its reason, so the page's
history says why it went on to OCR.
"""

from __future__ import annotations

from datetime import UTC, datetime

from app.domain import AttemptStatus, EngineResult, PageInput
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
            text=text, status=status, started_at=started, ended_at=datetime.now(UTC)
        )

    def close(self) -> None:
        return None
