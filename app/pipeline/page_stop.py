"""When a page's work stops early: its job was cancelled, or the page ran past its time budget.

Streaming engines ask at each chunk and the plan walk asks between attempts and between the
text-layer gate's stages (each bounded by the text-layer caps), so a stop lands within
seconds of its cause, and a page past its budget fails alone, with the budget in its reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.db.page_path import PageClose
from app.domain import PageStatus

CANCELLED = PageClose(
    PageStatus.FAILED, failure_category="cancelled", error="the job was cancelled"
)


class PageStop:
    """`cancelled` (the job's cancel check) or the page's own clock, from `started` (on
    `clock`), past `budget_s` (None: no budget); a callable, as `PageInput.should_stop` is."""

    def __init__(
        self,
        cancelled: Callable[[], bool],
        budget_s: float | None,
        clock: Callable[[], float] = time.monotonic,
        started: float | None = None,
    ) -> None:
        self.cancelled = cancelled
        self.budget_s = budget_s
        self.clock = clock
        self.started = clock() if started is None else started

    def __call__(self) -> bool:
        return self.cancelled() or self.over_budget()

    def over_budget(self) -> bool:
        return self.budget_s is not None and self.clock() - self.started > self.budget_s

    def close(self) -> PageClose:
        """How the stopped page closes: cancelled, or failed on its time budget."""
        if self.cancelled() or not self.over_budget():
            return CANCELLED
        return PageClose(
            PageStatus.FAILED,
            failure_category="page_time_budget",
            error=f"the page ran past its {self.budget_s:g} s time budget (page_time_budget_s)",
        )


def stopped_close(should_stop: Callable[[], bool]) -> PageClose:
    """How a page whose `should_stop` said stop closes (a plain check: cancelled)."""
    return should_stop.close() if isinstance(should_stop, PageStop) else CANCELLED
