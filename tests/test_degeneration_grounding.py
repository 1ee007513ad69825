"""Grounding: a loop verdict asked of the page's own text before it cuts (issue 50).

The pages here are built like real ones: a ledger whose rows share their words and differ in
their numbers (the shape a local view of the text cannot tell from a model writing one row
thirty times), the page's text layer as PyMuPDF gives it (cells on one line, no markup).
"""

from __future__ import annotations

import pytest

from app.degeneration import DetectorConfig, LoopDetector, LoopVerdict
from app.degeneration.grounded import GroundedDetector
from app.degeneration.grounding import (
    DEFAULT_MARGIN,
    PageText,
    grounding_tokens,
    unit_readings,
)
from app.vllm_plugin.actions import NO_ACTION
from app.vllm_plugin.behaviours import (
    LOOP_STOP_ARG,
    MARGIN_ARG,
    PAGE_TEXT_ARG,
    SLACK_ARG,
    LoopStop,
    behaviours_for,
)

ROWS = [f"| Lot {i} | Widget assembly, grey | {12 + i}.50 | EUR |" for i in range(30)]
LAYER = "Inventory\n" + "\n".join(r.replace("|", " ").strip() for r in ROWS) + "\nTotal 375.00"
ANSWER = "# Inventory\n\n| Lot | Item | Price | Cur |\n|---|---|---|---|\n" + "\n".join(ROWS)
ANSWER += "\n\nTotal 375.00\n"


def stream(detector: LoopDetector | GroundedDetector, text: str) -> tuple[LoopVerdict | None, int]:
    """The verdict and the characters fed when it came (4 a token, as a stream)."""
    for start in range(0, len(text), 4):
        if detector.feed(text[start : start + 4]) is not None:
            return detector.verdict, start + 4
    return detector.finish(), len(text)


def looping(row: str, copies: int) -> str:
    """The ledger's first five rows, then one row written `copies` times."""
    head = ANSWER.split("\n| Lot 5 ")[0]
    return head + "\n" + "\n".join([row] * copies)


def test_a_table_the_page_holds_is_not_cut_where_the_detector_alone_cuts_it() -> None:
    alone, _ = stream(LoopDetector(), ANSWER)
    grounded = GroundedDetector(None, LAYER)
    verdict, fed = stream(grounded, ANSWER)

    assert alone is not None  # the false alarm grounding exists for
    assert verdict is None and fed == len(ANSWER)
    assert grounded.overruled and all(g.page_copies >= 29 for g in grounded.overruled)


def test_a_loop_on_a_line_the_page_holds_once_is_cut_where_it_was() -> None:
    text = "Summary of the audit.\n" + "The committee met twice and approved the budget.\n" * 40
    layer = "Summary of the audit. The committee met twice and approved the budget. Signed."
    alone, at_alone = stream(LoopDetector(), text)
    grounded = GroundedDetector(None, layer)
    verdict, at = stream(grounded, text)

    assert alone is not None and verdict == alone and at == at_alone
    assert grounded.standing is not None and grounded.standing.page_copies == 1


@pytest.mark.parametrize("margin", [0, DEFAULT_MARGIN, 5])
def test_a_loop_on_a_unit_the_page_holds_is_cut_soon_after_the_pages_count(margin: int) -> None:
    """Grounding never clears a loop: it is cut within the margin plus the detector's own
    latency (it counts the unit afresh from each overrule) past the page's count. An exact
    repeat is counted with its numbers masked on both sides (`ground` says why)."""
    row = ROWS[5]
    grounded = GroundedDetector(None, LAYER, margin)
    verdict, fed = stream(grounded, looping(row, 400))

    assert verdict is not None
    standing = grounded.standing
    assert standing is not None and standing.page_copies == 30
    # rows of the ledger's shape in the output: its first five, then the copies
    rows = 5 + (fed - len(looping(row, 0))) // (len(row) + 1)
    latency = DetectorConfig().min_repeats + 2  # copies the fresh detector needs, and a spare
    assert 30 + margin < rows <= 30 + margin + latency


def test_units_the_page_cannot_hold_keep_their_verdict() -> None:
    """Rules, fill and numbers: no words to ask the page about."""
    for text in ("Totals " + "-" * 3000, "Readings: " + "0.00 " * 400, "Wow" + "!" * 40):
        alone, at_alone = stream(LoopDetector(), text)
        verdict, at = stream(GroundedDetector(None, text * 3), text)
        assert alone is not None and verdict == alone and at == at_alone


def test_the_page_is_read_as_the_output_is_written() -> None:
    """Markdown, HTML, numbers and ligatures read alike on both sides; CJK per character."""
    assert grounding_tokens("| **Net ﬁnal** | <td>1,234.50</td> |") == ["net", "final", "0"]
    assert grounding_tokens("Net final  1.234,50") == ["net", "final", "0"]
    assert grounding_tokens("营业收入 12") == ["营", "业", "收", "入", "0"]
    assert grounding_tokens("degen-\neration") == ["degeneration"]
    page = PageText("Net final 1 Net final 2 Net final 3")
    assert max(page.copies(r) for r in unit_readings("final | 7 | Net ")) == 3


def test_a_unit_started_mid_word_is_read_from_its_word_starts() -> None:
    readings = unit_readings("ained model\nPretr")
    assert ("pretrained", "model") in readings


def test_the_plugins_loop_stop_asks_the_page_it_is_sent() -> None:
    args = {LOOP_STOP_ARG: 1, PAGE_TEXT_ARG: LAYER, MARGIN_ARG: 2}
    (stop,) = behaviours_for(args)
    assert isinstance(stop, LoopStop)
    ended = any(stop.step([1], ANSWER[i : i + 4]).end for i in range(0, len(ANSWER), 4))
    assert not ended and stop.verdict is None
    (alone,) = behaviours_for({LOOP_STOP_ARG: 1})
    assert any(alone.step([1], ANSWER[i : i + 4]).end for i in range(0, len(ANSWER), 4))


@pytest.mark.parametrize(
    ("value", "match"),
    [({PAGE_TEXT_ARG: 3}, "page's text"), ({PAGE_TEXT_ARG: "x", MARGIN_ARG: -1}, "whole")],
)
def test_bad_grounding_args_are_refused(value: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        behaviours_for({LOOP_STOP_ARG: 1, **value})


SITES = ["northern", "southern", "eastern", "western", "central"]
DRIFTING = (
    "Storage log\n\n"
    + "\n".join(
        f"- The samples from the {s} site were stored at four degrees overnight." for s in SITES
    )
    + "\n\nSigned by the lab manager.\n"
)


def test_copies_that_differ_by_a_word_are_counted_by_the_detectors_rule() -> None:
    """Like with like (issue 65): five lines that differ in one word are five near copies on
    the page as in the answer, though the page holds each line word for word once; the
    page's line breaks (a text layer wraps where it likes) do not matter."""
    alone, _ = stream(LoopDetector(), DRIFTING)
    wrapped = " ".join(DRIFTING.split())  # one line: the copies are stretches of tokens
    grounded = GroundedDetector(None, wrapped)
    verdict, _ = stream(grounded, DRIFTING)

    assert alone is not None and alone.near
    assert verdict is None
    (asked,) = grounded.overruled
    assert asked.measure == "near" and asked.page_copies == 5 >= asked.output_copies


def test_copies_that_differ_by_a_word_past_the_pages_count_are_cut() -> None:
    words = [a + b for a in "bcdfg" for b in ("ar", "el", "on", "ut", "is", "ow", "ey", "ax")]
    looping = "Storage log\n\n" + "\n".join(
        f"- The samples from the {w} site were stored at four degrees overnight." for w in words
    )
    grounded = GroundedDetector(None, DRIFTING)
    verdict, fed = stream(grounded, looping)

    assert verdict is not None and grounded.standing is not None
    assert grounded.standing.page_copies == 5
    written = looping[:fed].count("\n- ")
    assert written <= 5 + DEFAULT_MARGIN + DetectorConfig().min_repeats + 2


def test_the_plugins_loop_stop_counts_near_copies_alike() -> None:
    (stop,) = behaviours_for({LOOP_STOP_ARG: 1, PAGE_TEXT_ARG: DRIFTING, MARGIN_ARG: 2})
    assert not any(stop.step([1], DRIFTING[i : i + 4]).end for i in range(0, len(DRIFTING), 4))
    (alone,) = behaviours_for({LOOP_STOP_ARG: 1})
    assert any(alone.step([1], DRIFTING[i : i + 4]).end for i in range(0, len(DRIFTING), 4))


# Rows of a pharmacy's price list (scribeocr/ocr-benchmark's table_12): three rows that differ
# by a word (`MN`) and their numbers, each long enough as written to differ by a word (the
# detector's `fuzzy_min_chars`), and as tokens (`0 glyburide tablets 0 mg 0 0 0 0 0 0`) not.
PRICE_ROWS = [
    "00093-8035-01 GLYBURIDE MICRONIZED TAB GL 3MG 100 $19.45 $19.06 $6.26 $0.00 $6.26",
    "00093-9433-01 GLYBURIDE TABLETS 2.5MG 100 $20.65 $20.24 $11.64 $0.00 $11.64",
    "00093-8342-01 GLYBURIDE TABLETS MN 1.25MG 100 $12.67 $12.42 $5.85 $0.00 $5.85",
    "00093-8344-05 GLYBURIDE TABLETS MN 5MG 500 $135.67 $132.96 $60.97 $0.00 $60.97",
    "00093-1234-01 GRANISETRON HCL TABLETS 1MG 20 $150.55 $147.54 $9.72 $0.00 $9.72",
]
PRICES = "NDC ITEM SIZE AWP WAC PRICE DISC NET\n" + "\n".join(PRICE_ROWS) + "\n"


def test_rows_long_enough_as_written_to_differ_by_a_word_are_counted_so_on_the_page() -> None:
    alone, _ = stream(LoopDetector(), PRICES)
    grounded = GroundedDetector(None, PRICES.replace("$", ""))  # an OCR read drops some `$`
    verdict, _ = stream(grounded, PRICES)

    assert alone is not None and alone.near  # the verdict on the rows that differ by a word
    assert verdict is None
    assert [(g.page_copies, g.measure) for g in grounded.overruled] == [(3, "near")]


def test_rows_that_differ_by_a_word_past_what_the_page_holds_are_still_cut() -> None:
    answer = PRICES + "\n".join([PRICE_ROWS[2]] * 30) + "\n"
    verdict, fed = stream(GroundedDetector(None, PRICES), answer)

    assert verdict is not None and fed < len(answer)
    assert answer[:fed].count("GLYBURIDE TABLETS MN") <= 2 + DEFAULT_MARGIN + 3 + 1


def test_a_letter_beside_a_number_is_asked_as_the_pair() -> None:
    column = ["13 A"] * 6 + ["13 A-14 A", "13 B-14 A"] + ["13 B"] * 14 + ["14 A"] * 5
    answer = "WARD REGISTER\n" + "\n".join(column) + "\n"
    read = "WARD REGISTER " + " ".join(column)  # an OCR read of the column: one line

    assert unit_readings("13 B") == [("b", "0")]  # from its word starts
    assert unit_readings("B") == [] and unit_readings("13 14") == []
    alone, _ = stream(LoopDetector(), answer)
    verdict, _ = stream(GroundedDetector(None, read), answer)
    assert alone is not None and alone.unit == "13 B" and verdict is None
    looped = answer + "13 B\n" * 40
    cut, fed = stream(GroundedDetector(None, read), looped)
    assert cut is not None and fed < len(looped)


def test_a_scans_read_may_be_one_copy_short_a_text_layer_may_not() -> None:
    head = "RECEIPT 0021\nCASHIER 3\n1/4 CHIC+ 1SD-T @ 17.90\nS\n"
    tail = "3\nCOLES LAW(R)-TC\nS\nSUB TOTAL\n129.30\nAMT DUE\n129.30\n"
    answer = head + "GRILLVEG-H\n" * 5 + tail
    read = head + "GRILLVEG-H\nGRILIVEG-H\nGRILLVEG-H\nGRILLVEG-H\nGRILLVE6-H\n" + tail

    alone, _ = stream(LoopDetector(), answer)
    assert alone is not None and alone.repeats < 5  # three copies read, four at the verdict
    as_layer, _ = stream(GroundedDetector(None, read), answer)
    as_read, _ = stream(GroundedDetector(None, read, slack=1), answer)
    assert as_layer is not None and as_read is None
    stop = LoopStop.from_args({LOOP_STOP_ARG: 1, PAGE_TEXT_ARG: read, MARGIN_ARG: 2, SLACK_ARG: 1})
    assert stop is not None
    assert all(stop.step([1], answer[i : i + 4]) is NO_ACTION for i in range(0, len(answer), 4))
    with pytest.raises(ValueError, match=SLACK_ARG):
        LoopStop.from_args({LOOP_STOP_ARG: 1, PAGE_TEXT_ARG: read, SLACK_ARG: -1})
