"""Loop shapes the detector used to catch late or never (issue 39): a diagram loop inside a
code block nested in a ```` ```markdown ```` answer, ordinal counters, loops inside the string
values of a JSON answer. Each is caught within the characters stated here, counted from the
loop's first copy; its healthy look-alike is not flagged."""

from app.degeneration import LoopDetector, score_output
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
