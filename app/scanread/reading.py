"""What a scan reader gives back."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reading:
    text: str
    model: str  # which reader and models read it, for the attempt's record
    score: float  # the reader's mean confidence in its lines, 0-1 (0 for no line)
