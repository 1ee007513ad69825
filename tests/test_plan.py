"""The next-attempt choice, as a table."""

from __future__ import annotations

import pytest

from app.domain import AttemptStatus as S
from app.plan import Limits, PageFacts, PastAttempt, next_step, repeated_loops
from app.settings import Settings

PLAN = Settings().plan("vlm")  # greedy, penalized, fallback-model, textlayer, tesseract
BOTH = frozenset({"primary", "fallback"})
PRIMARY = frozenset({"primary"})
LIMITS = Limits(max_attempts=8, token_budget=10_000)


def past(*items: tuple[int, S, int]) -> list[PastAttempt]:
    return [PastAttempt(i, s, t) for i, s, t in items]


CAP1 = Limits(max_attempts=8, token_budget=10_000, repeated_loops=1)


def loops(*verdicts: tuple[str, int]) -> list[PastAttempt]:
    """Degenerate attempts at the plan's first steps, with these (kind, period) verdicts."""
    return [PastAttempt(i, S.DEGENERATE, 100, loop=v) for i, v in enumerate(verdicts)]


CASES = [
    # (history, text layer usable, endpoints, limits, expected next index)
    ([], False, BOTH, LIMITS, 0),
    (past((0, S.OK, 100)), False, BOTH, LIMITS, None),
    (past((0, S.DEGENERATE, 900)), False, BOTH, LIMITS, 1),
    (past((0, S.DEGENERATE, 900), (1, S.DEGENERATE, 900)), False, BOTH, LIMITS, 2),
    (past((0, S.DEGENERATE, 900), (1, S.DEGENERATE, 900)), False, PRIMARY, LIMITS, 4),
    (past((0, S.DEGENERATE, 900), (1, S.DEGENERATE, 900)), True, PRIMARY, LIMITS, 3),
    (past((0, S.TRANSPORT_ERROR, 0)), False, BOTH, LIMITS, 2),
    (past((0, S.TRANSPORT_ERROR, 0)), True, PRIMARY, LIMITS, 3),
    (past((0, S.DEGENERATE, 10_000)), False, BOTH, LIMITS, 4),
    (past((0, S.EMPTY, 0)), False, BOTH, LIMITS, 1),
    (past((0, S.DEGENERATE, 1), (4, S.EMPTY, 0)), False, BOTH, LIMITS, None),
    (past((0, S.DEGENERATE, 1), (4, S.ERROR, 0)), False, BOTH, LIMITS, None),
    (past((0, S.DEGENERATE, 1)), False, BOTH, Limits(1, 10_000), None),
    ([], False, frozenset(), LIMITS, 4),
    # The repeated-loop cap: the second attempt repeats the first one's loop.
    (loops(("rep", 7), ("rep", 7)), False, BOTH, CAP1, 4),
    (loops(("rep", 7), ("rep", 7)), True, BOTH, CAP1, 3),
    (loops(("rep", 7), ("rep", 9)), False, BOTH, CAP1, 2),
    (loops(("rep", 7), ("line", 7)), False, BOTH, CAP1, 2),
    (loops(("rep", 7), ("rep", 7)), False, BOTH, Limits(8, 10_000, repeated_loops=2), 2),
    (loops(("rep", 7), ("rep", 7)), False, BOTH, LIMITS, 2),
    (loops(("rep", 7)), False, BOTH, Limits(8, 10_000, repeated_loops=0), 4),
]


@pytest.mark.parametrize(("history", "usable", "endpoints", "limits", "expected"), CASES)
def test_next_step(history, usable, endpoints, limits, expected) -> None:
    facts = PageFacts(text_layer_usable=usable, endpoints=endpoints)
    assert next_step(PLAN, history, facts, limits) == expected


def test_auto_plan_prefers_a_usable_text_layer() -> None:
    plan = Settings().plan("auto")
    assert (
        plan[next_step(plan, [], PageFacts(True, frozenset()), LIMITS) or 0].engine == "textlayer"
    )
    index = next_step(plan, [], PageFacts(False, frozenset()), LIMITS)
    assert index is not None and plan[index].engine == "tesseract"


def test_repeated_loops_counts_only_repeats() -> None:
    history = loops(("rep", 7), ("rep", 9), ("rep", 7), ("rep", 7)) + past((3, S.OK, 5))
    assert repeated_loops(history) == 2
    assert repeated_loops(loops(("rep", 7), ("line", 7))) == 0
