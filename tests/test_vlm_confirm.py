"""The confirming attempt's relaxed stop and judge (app/engines/vlm_confirm.py), on the
false-alarm bench's pages: the confirmed unit, and only it, tolerated up to its bound."""

from __future__ import annotations

import pytest

from app.degeneration import DetectorConfig, LoopDetector, ScoreConfig, score_output
from app.domain import ConfirmedUnit
from app.engines.vlm_confirm import (
    CUT_MULTIPLE,
    Tolerance,
    TolerantDetector,
    judge_confirming,
    same_unit,
)
from bench.false_alarms.pages import LEDGER, LEDGER_ROW, PASSPORT
from bench.vllm_standin.scripted import pieces

# The detector as issue 39 found the passport's false alarm (tests/test_false_alarms.py).
EAGER = DetectorConfig(char_run_min=12, mrz_fill_run_min=12)


def first_cut(text: str, config: DetectorConfig | None = None) -> ConfirmedUnit:
    """What a stop on `text` streamed token by token records: the unit and the cut text."""
    detector, written = LoopDetector(config), ""
    for piece in pieces(text):
        written += piece
        if (verdict := detector.feed(piece)) is not None:
            unit = written[verdict.onset : verdict.onset + verdict.period]
            return ConfirmedUnit(verdict.kind, unit, written, verdict.onset)
    raise AssertionError("no verdict")


def stream(text: str, detector: TolerantDetector) -> tuple[object, int]:
    """The verdict a tolerant detector gives on `text`, and the characters read by then."""
    read = 0
    for piece in pieces(text):
        read += len(piece)
        if (verdict := detector.feed(piece)) is not None:
            return verdict, read
    return detector.finish(), read


PASSPORT_CUT = first_cut(PASSPORT, EAGER)
LEDGER_CUT = first_cut(LEDGER.text + LEDGER_ROW * 20)


def test_the_cuts_are_on_the_units_the_bench_means() -> None:
    assert PASSPORT_CUT.kind == "char_run" and set(PASSPORT_CUT.unit) == {"<"}
    assert score_output(PASSPORT, "stop", config=None).degenerate is False
    assert Tolerance.of(LEDGER_CUT).at_cut == 3  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("<", "<<<<", True),
        ("| 2024-03-02 | Paid | 120.00 |\n", "| 2024-03-09 |  Paid | 7.5 |\n", True),
        ("| 2024-03-02 | Paid | 120.00 |\n", "0.00 |\n| 2024-03-02 | Paid | 12", True),  # phase
        ("| 2024-03-02 | Paid | 120.00 |\n", "| 2024-03-02 | Refund | 120.00 |\n", False),
        ("<", "-", False),
        ("  \n", "  \n", False),  # white space is no unit
    ],
)
def test_same_unit_up_to_white_space_numbers_and_phase(a: str, b: str, same: bool) -> None:
    assert same_unit(a, b) is same


def test_a_page_that_holds_its_repetition_passes_with_only_that_unit_tolerated() -> None:
    tolerance = Tolerance.of(PASSPORT_CUT)
    assert tolerance is not None
    eager = ScoreConfig(detector=EAGER)
    assert score_output(PASSPORT, "stop", config=eager).degenerate  # the false alarm
    judged = judge_confirming(PASSPORT, tolerance, "stop", 675, 4096, EAGER)
    assert judged.verdict is None and 0 < judged.most_copies <= tolerance.bound


def test_a_loop_that_ends_is_still_degeneration() -> None:
    """Issue 50: the ledger row 60 times, then the end of the answer."""
    tolerance = Tolerance.of(LEDGER_CUT)
    bound = CUT_MULTIPLE * 3
    assert tolerance is not None and tolerance.bound == bound
    ended = LEDGER.text + LEDGER_ROW * 60
    judged = judge_confirming(ended, tolerance, "stop", 1900, 4096)
    assert judged.verdict is not None and bound < judged.most_copies <= bound + 4
    assert judged.verdict.kind == LEDGER_CUT.kind and f"(bound {bound})" in judged.reason
    # where the page's own text holds the row 60 times, 60 copies are the page's
    grounded = Tolerance.of(ConfirmedUnit(**{**LEDGER_CUT.__dict__, "page_holds": 60}))
    assert grounded is not None and grounded.bound == 75
    assert judge_confirming(ended, grounded, "stop", 1900, 4096).verdict is None
    # and where it holds it twice, 12 copies are a loop the margin does not cover
    twice = Tolerance.of(ConfirmedUnit(**{**LEDGER_CUT.__dict__, "page_holds": 2}))
    assert twice is not None and twice.bound == 4
    assert judge_confirming(LEDGER.text + LEDGER_ROW * 12, twice, "stop", 500, 4096).verdict


def test_only_the_confirmed_unit_is_tolerated() -> None:
    """The passport's `<` may run; a paragraph said four times at the end may not (the
    stream's detector sees it), nor an answer that ends inside a sentence said again (the
    offline scorer's tail rule sees that)."""
    tolerance = Tolerance.of(PASSPORT_CUT)
    assert tolerance is not None
    closing = "It remains the property of the Government of Utopia and must be surrendered. "
    judged = judge_confirming(PASSPORT + closing * 4, tolerance, "stop", 900, 4096, EAGER)
    assert judged.verdict is not None and judged.reason == "another loop"
    bearer = "The bearer of this passport is a citizen of Utopia and may pass freely. "
    ended = PASSPORT + "Observations: none. " + bearer + bearer.strip()
    judged = judge_confirming(ended, tolerance, "stop", 900, 4096, EAGER)
    assert judged.verdict is not None and judged.reason == "offline scorer: tail_loop"


def test_the_stream_lets_a_healthy_run_through_and_cuts_a_sticky_one_past_its_bound() -> None:
    tolerance = Tolerance.of(PASSPORT_CUT)
    assert tolerance is not None
    passport = TolerantDetector(lambda: LoopDetector(EAGER), tolerance)
    assert stream(PASSPORT, passport)[0] is None and len(passport.spans) >= 1

    ledger = Tolerance.of(LEDGER_CUT)
    assert ledger is not None
    sticky = TolerantDetector(LoopDetector, ledger)
    verdict, read = stream(LEDGER.text + LEDGER_ROW * 200, sticky)
    assert verdict is not None and len(sticky.spans) == 1
    copies = (read - len(LEDGER.text)) / len(LEDGER_ROW)
    assert ledger.bound < copies <= ledger.bound + 4  # the detector's own wait past the bound
    assert verdict.onset <= len(LEDGER.text)  # type: ignore[attr-defined]


def test_another_loop_is_cut_as_soon_as_without_the_tolerance() -> None:
    tolerance = Tolerance.of(PASSPORT_CUT)
    assert tolerance is not None
    looped = LEDGER.text + LEDGER_ROW * 20
    plain = LoopDetector()
    _, plain_read = stream_plain(looped, plain)
    verdict, read = stream(looped, TolerantDetector(LoopDetector, tolerance))
    assert verdict is not None and read == plain_read


def stream_plain(text: str, detector: LoopDetector) -> tuple[object, int]:
    read = 0
    for piece in pieces(text):
        read += len(piece)
        if (verdict := detector.feed(piece)) is not None:
            return verdict, read
    return None, read
