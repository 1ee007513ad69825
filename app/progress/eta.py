"""An ETA from the measured pace of a job's pages: pure, tested as a table."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

# The pace is read over the latest pages: it follows a job that speeds up or slows down.
PACE_WINDOW = 32


def eta_seconds(finish_times: Sequence[datetime], open_pages: int) -> float | None:
    """Seconds until the job's open pages are done at the pace its latest pages finished
    (pages in flight together count as such: the pace is pages per second of wall time);
    None until two pages have finished at different times."""
    if open_pages == 0:
        return 0.0
    recent = sorted(finish_times)[-PACE_WINDOW:]
    if len(recent) < 2:
        return None
    span = (recent[-1] - recent[0]).total_seconds()
    if span <= 0:
        return None
    return round(open_pages * span / (len(recent) - 1), 1)
