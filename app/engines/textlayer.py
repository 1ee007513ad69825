"""The PDF's own text layer as an engine: exact and instant for born-digital pages."""

from __future__ import annotations

from datetime import UTC, datetime

from app.domain import AttemptStatus, EngineResult, PageInput
from app.settings import PlanStep


class TextLayerEngine:
    name = "textlayer"

    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        started = datetime.now(UTC)
        text = page.text_layer.strip()
        status = AttemptStatus.OK if text else AttemptStatus.EMPTY
        return EngineResult(
            text=text, status=status, started_at=started, ended_at=datetime.now(UTC)
        )

    def close(self) -> None:
        return None
