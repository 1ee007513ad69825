"""What every answer parser returns, and how it says an answer cannot be read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.errors import FolioError


class Unparseable(FolioError):
    """The answer is not in the format the model was trained to answer in."""

    category = "unparseable"


@dataclass(frozen=True)
class AnswerBox:
    """A block the answer placed on the page: its text, its category and its box
    (x0, y0, x1, y1) in the answer's own units (the profile's `response.boxes` names them)."""

    text: str
    category: str
    box: tuple[float, float, float, float]


@dataclass(frozen=True)
class Parsed:
    """The page as Markdown, the structured fields the answer carried beside it, and the
    blocks it placed on the page (formats with boxes only)."""

    markdown: str
    fields: dict[str, Any] = field(default_factory=dict)
    boxes: tuple[AnswerBox, ...] = ()


def box_of(values: Any) -> tuple[float, float, float, float] | None:
    """Four numbers as a box; None for anything else (a model's malformed box is skipped,
    as the official post-processors skip it)."""
    if not isinstance(values, list | tuple) or len(values) != 4:
        return None
    try:
        x0, y0, x1, y1 = (float(v) for v in values)
    except (TypeError, ValueError):
        return None
    return x0, y0, x1, y1
