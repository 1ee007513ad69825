"""Loop shapes the detector used to catch late or never (issue 39): a diagram loop inside a
code block nested in a ```` ```markdown ```` answer, ordinal counters, loops inside the string
values of a JSON answer. Each is caught within the characters stated here, counted from the
loop's first copy; its healthy look-alike is not flagged."""

from collections.abc import Callable

import pytest

from app.degeneration import DetectorConfig, LoopDetector, score_output
from bench.detector_false_alarms import healthy_shapes
from bench.mixed_text import chunks

PREFIX = (
    "Minutes of the harbour board. The board met in March and reviewed the dredging plan, the "
    "pier repairs and the new tide gauge.\n\n"
)
AFTER = "\n\nThe meeting closed at nine. The next one is in June.\n"


def caught_after(text: str, loop_start: int) -> int | None:
    """Characters streamed from `loop_start` to the verdict (16-character chunks), or None."""
    detector = LoopDetector()
    for piece in chunks(text, 16):
        if detector.feed(piece) is not None:
            return detector.text_length - loop_start
    return None


def flagged(text: str) -> bool:
    detector = LoopDetector()
    streamed = any(detector.feed(piece) is not None for piece in chunks(text, 16))
    return streamed or score_output(text).degenerate


# --- nested fences ------------------------------------------------------------------------

DIAGRAM_HEAD = "```\n┌────────────┬──────────┬──────────┐\n│ Pier       │ Depth    │ Date     │\n"
DIAGRAM_ROW = "│            │          │          │\n"


def wrapped_answer(rows: int) -> str:
    return (
        "```markdown\n# Harbour board\n\n" + PREFIX + "```python\nprint(depth)\n```\n\n"
        "The piers:\n\n" + DIAGRAM_HEAD + DIAGRAM_ROW * rows
    )


def test_a_diagram_loop_in_a_code_block_nested_in_a_markdown_answer_is_caught_early() -> None:
    # Before issue 39 the python block's closing fence was read as closing the wrapper, the
    # diagram's opening fence as closing everything, and the rows as prose: ~9,500 chars.
    text = wrapped_answer(400)
    loop_start = text.index(DIAGRAM_ROW)
    latency = caught_after(text, loop_start)
    assert latency is not None and latency <= 17 * len(DIAGRAM_ROW) + 64


def test_a_tall_box_in_a_nested_code_block_is_not_a_loop() -> None:
    answer = wrapped_answer(10) + "└────────────┴──────────┴──────────┘\n```\n" + AFTER + "```\n"
    assert not flagged(answer)


# --- counters: ordinals, and counting lists --------------------------------------------------

ORDINALS = [
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
]
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
UNITS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"]


def ordinal(k: int) -> str:
    """`fifth` ... `twentieth`, `twenty-first` ... `ninety-ninth` (no round tens)."""
    if k < len(ORDINALS):
        return ORDINALS[k]
    k -= len(ORDINALS)
    return f"{TENS[k // 9]}-{UNITS[k % 9]}"


def counting(make: Callable[[int], str], copies: int) -> tuple[str, int, float]:
    units = [make(k) for k in range(copies)]
    return PREFIX + "".join(units), len(PREFIX), sum(map(len, units)) / copies


def test_an_ordinal_counter_in_a_sentence_is_caught_once_it_counts_beyond_a_list() -> None:
    copies = DetectorConfig().counter_min_copies
    text, onset, period = counting(lambda k: f"This is the {ordinal(k)} item of the list. ", 80)
    latency = caught_after(text, onset)
    assert latency is not None and latency <= copies * period + 64, (latency, period)


def test_an_ordinal_counter_on_short_lines_is_caught_once_it_counts_beyond_a_list() -> None:
    copies = DetectorConfig().counter_min_copies
    text, onset, period = counting(lambda k: f"- The {ordinal(k)} item\n", 80)
    latency = caught_after(text, onset)
    assert latency is not None and latency <= copies * period + 64, (latency, period)


def test_a_list_that_counts_in_words_for_a_page_is_not_a_loop() -> None:
    text, _, _ = counting(lambda k: f"- The {ordinal(k)} item of the list\n", 48)
    assert not flagged(text + AFTER)


# --- healthy pages of the shapes behind today's false alarms --------------------------------

FIXED = (
    "wide table separator",
    "sparse table",
    "figure list with counters",
    "device lines",
    "badge lines",
)


@pytest.mark.parametrize("name", FIXED)
def test_healthy_pages_of_false_alarm_shapes_are_not_stopped(name: str) -> None:
    shape = next(s for s in healthy_shapes() if s.name == name)
    detector = LoopDetector()
    assert not any(detector.feed(piece) is not None for piece in chunks(shape.text, 16))
