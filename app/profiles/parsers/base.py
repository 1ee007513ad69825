"""What every answer parser returns, and how it says an answer cannot be read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.errors import FolioError


class Unparseable(FolioError):
    """The answer is not in the format the model was trained to answer in."""

    category = "unparseable"


@dataclass(frozen=True)
class Parsed:
    """The page as Markdown, and the structured fields the answer carried beside it."""

    markdown: str
    fields: dict[str, Any] = field(default_factory=dict)
