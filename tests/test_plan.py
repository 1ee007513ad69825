"""The next-attempt choice, as a table."""

from __future__ import annotations

import pytest

from app.domain import AttemptStatus as S
from app.retry.plan import (
    Limits,
    LoopStop,
    NextAttempt,
    PageFacts,
    PastAttempt,
    false_alarms,
    next_attempt,
    next_step,
    repeated_loops,
    same_stop,
)
from app.settings import PlanStep, Settings

PLAN = [
    PlanStep(name="greedy", engine="vlm", endpoint="primary", temperature=0.0),
    PlanStep(name="penalized", engine="vlm", endpoint="primary", temperature=0.3),
    PlanStep(name="fallback-model", engine="vlm", endpoint="fallback", temperature=0.0),
    PlanStep(name="textlayer", engine="textlayer"),
    PlanStep(name="tesseract", engine="tesseract"),
]
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
    # an invalid answer (truncated, unparseable) is moved on from like a loop
    (past((0, S.INVALID, 900)), False, BOTH, LIMITS, 1),
    (past((0, S.INVALID, 900), (1, S.DEGENERATE, 900)), True, PRIMARY, LIMITS, 3),
    (past((0, S.INVALID, 10_000)), False, BOTH, LIMITS, 4),
]


def test_the_default_vlm_plan_is_the_default_profiles_ladder() -> None:
    settings = Settings()
    ladder = settings.profile_of("primary").ladder
    vlm_steps = [s for s in settings.plan("vlm") if s.endpoint == "primary"]
    assert [s.temperature for s in vlm_steps] == [0.1, 0.2, 0.5]
    assert {s.temperature for s in vlm_steps} <= {rung.temperature for rung in ladder}


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


# A passport page's answer (its machine-readable zone is filled with `<`), as a greedy read
# and a sampled retry write it up to the verdict; and two loops that start elsewhere.
MRZ_PAGE = (
    "# PASSPORT / PASSEPORT\n\nType: P  Country code: UTO  Passport No.: L898902C3\n"
    "Surname: ERIKSSON\nGiven names: ANNA MARIA\nNationality: UTOPIAN\n"
    "Date of birth: 12 AUG 1974  Sex: F  Date of expiry: 15 APR 2012\n\n"
    "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<"
)
SAMPLED = MRZ_PAGE.replace("UTOPIAN", "UTOPIAN.")  # one character more, 36 pieces fewer
STOP = LoopStop("char_run", len(MRZ_PAGE) - 13, MRZ_PAGE)
RETRY_STOP = LoopStop("char_run", len(SAMPLED) - 13, SAMPLED)
ELSEWHERE = LoopStop("char_run", 40, MRZ_PAGE[:53])  # the same unit, far earlier
OTHER_KIND = LoopStop("line", STOP.onset, MRZ_PAGE)
OTHER_TEXT = LoopStop("char_run", STOP.onset, "Lorem ipsum dolor sit amet, " * 9 + "<" * 13)
CONFIRM = Limits(max_attempts=8, token_budget=10_000, repeated_loops=1, confirm_repeated_stops=True)


def cut(index: int, stop: LoopStop, confirming: bool = False) -> PastAttempt:
    """An attempt at step `index` that a loop verdict cut short at `stop`."""
    return PastAttempt(index, S.DEGENERATE, 300, (stop.kind, 1), stop, confirming)


CONFIRM_CASES = [
    # (history, limits, expected next attempt)
    ([cut(0, STOP)], CONFIRM, NextAttempt(1)),
    ([cut(0, STOP), cut(1, RETRY_STOP)], CONFIRM, NextAttempt(1, confirming=True)),
    ([cut(0, STOP), cut(1, STOP)], CONFIRM, NextAttempt(1, confirming=True)),
    # off: the repeated-loop cap leaves only Tesseract, as before
    ([cut(0, STOP), cut(1, RETRY_STOP)], CAP1, NextAttempt(4)),
    # not the same stop: another place, another kind, another text
    ([cut(0, STOP), cut(1, ELSEWHERE)], CONFIRM, NextAttempt(4)),
    ([cut(0, STOP), cut(1, OTHER_KIND)], CONFIRM, NextAttempt(2)),
    ([cut(0, STOP), cut(1, OTHER_TEXT)], CONFIRM, NextAttempt(4)),
    # a loop that ran to its cap (no stop) is not evidence of anything
    ([cut(0, STOP), PastAttempt(1, S.DEGENERATE, 300, ("char_run", 1))], CONFIRM, NextAttempt(4)),
    # once a page: a confirming attempt that looped to its cap moves the page on
    (
        [cut(0, STOP), cut(1, STOP), cut(1, STOP, confirming=True)],
        CONFIRM,
        NextAttempt(4),
    ),
    # the page's limits hold for it too
    ([cut(0, STOP), cut(1, STOP)], Limits(2, 10_000, 1, True), None),
    ([cut(0, STOP), cut(1, STOP)], Limits(8, 600, 1, True), NextAttempt(4)),
    (
        [cut(0, STOP), cut(1, STOP), PastAttempt(1, S.OK, 300, confirming=True)],
        CONFIRM,
        None,
    ),
]


@pytest.mark.parametrize(("history", "limits", "expected"), CONFIRM_CASES)
def test_next_attempt_confirms_a_stop_repeated_at_the_same_place(history, limits, expected) -> None:
    facts = PageFacts(text_layer_usable=False, endpoints=BOTH)
    assert next_attempt(PLAN, history, facts, limits) == expected


def test_next_attempt_is_next_step_without_a_repeated_stop() -> None:
    for history, usable, endpoints, limits, expected in CASES:
        facts = PageFacts(usable, endpoints)
        chosen = next_attempt(PLAN, history, facts, limits)
        assert (chosen.index if chosen else None) == expected
        assert chosen is None or not chosen.confirming


def test_no_confirming_attempt_on_an_endpoint_gone_from_the_deployment() -> None:
    history = [cut(0, STOP), cut(1, STOP)]
    assert next_attempt(PLAN, history, PageFacts(False, BOTH), CONFIRM) == NextAttempt(1, True)
    gone = PageFacts(False, frozenset({"fallback"}))
    assert next_attempt(PLAN, history, gone, CONFIRM) == NextAttempt(4)


def test_same_stop_is_symmetric_and_tolerates_a_few_changed_characters() -> None:
    assert same_stop(STOP, RETRY_STOP) and same_stop(RETRY_STOP, STOP)
    assert not same_stop(STOP, ELSEWHERE) and not same_stop(ELSEWHERE, STOP)
    assert not same_stop(STOP, OTHER_TEXT) and not same_stop(STOP, OTHER_KIND)


def test_false_alarms_are_the_stops_a_confirmed_answer_repeated() -> None:
    answer = PastAttempt(1, S.OK, 500, confirming=True)
    history = [cut(0, OTHER_TEXT), cut(1, STOP), cut(2, RETRY_STOP), answer]
    assert false_alarms(history) == [STOP, RETRY_STOP]
    assert false_alarms([cut(0, STOP), cut(1, STOP)]) == []
