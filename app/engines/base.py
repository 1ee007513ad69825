"""The one narrow interface every OCR engine implements."""

from __future__ import annotations

from typing import Protocol

from app.domain import EngineResult, PageInput
from app.settings import PlanStep


class Engine(Protocol):
    """Transcribes one page under one plan step. Must be safe to call from several threads."""

    name: str

    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult: ...

    def close(self) -> None: ...
