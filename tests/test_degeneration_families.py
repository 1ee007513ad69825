"""Loop shapes judged per family, each beside the healthy structure its rule must not flag.

Every text here is constructed for the test (none is taken from the corpus): each family has
its loops and the healthy look-alikes that the rule's reason says it cannot fire on.
"""

import pytest

from app.degeneration import DetectorConfig, LoopDetector, score_output
from bench.detector.mixed_text import chunks

PREFIX = (
    "Minutes of the harbour board. The board met in March and reviewed the dredging plan, the "
    "pier repairs and the new tide gauge.\n\n"
)
AFTER = "\n\nThe meeting closed at nine. The next one is in June.\n"
NOTES = (
    "The dredger worked the north channel for two weeks.",
    "Pier four needs new fenders before the winter storms.",
    "A survey found silt building up near the fish market.",
    "The ferry company asked for a longer berth in summer.",
    "Repairs to the lock gates were finished under budget.",
    "The tide gauge read high water a little early in May.",
    "Two buoys drifted after the gale and were reset.",
    "The harbour master reported fewer groundings this year.",
    "Lighting on the east quay was replaced with lamps that last longer.",
    "Fishermen asked that the slipway be cleared of weed.",
    "A school visited the pilot station on open day.",
    "The old crane will be sold once the new one is working.",
)


def streamed(text: str) -> bool:
    """Whether the online detector stops the stream (16-character chunks)."""
    detector = LoopDetector()
    return any(detector.feed(piece) is not None for piece in chunks(text, 16))


def flagged(text: str) -> bool:
    return streamed(text) or score_output(text).degenerate


# --- line repeats of any content: rule lines ---------------------------------------------

RULES = ("===", "---", "***", "~~~~~~~~", "────────────", "- - -")


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("between", ["\n", "\n\n"])
def test_a_stacked_rule_line_is_a_loop_at_any_length(rule: str, between: str) -> None:
    repeats = DetectorConfig().rule_line_min_repeats
    assert streamed(PREFIX + "Tide table\n" + f"{rule}{between}" * (repeats + 2))
    assert not streamed(PREFIX + "Tide table\n" + f"{rule}{between}" * (repeats - 2))


@pytest.mark.parametrize(
    "healthy",
    [
        # Blanks to fill stack on forms and lined paper: not rules.
        "Notes:\n" + "________________________________________\n" * 20,
        "Remarks:\n" + "........................................\n" * 20,
        # Rules between content, however many: each separates something.
        "".join(f"{note}\n---\n" for note in NOTES),
        # Empty YAML front matter and a setext heading.
        "---\n---\n\nHarbour board\n=============\n\nThe board met.\n",
        # A Markdown table of empty rows (a sign-up sheet).
        "| Name | Signature |\n|---|---|\n" + "|  |  |\n" * 25,
    ],
)
def test_blanks_forms_and_separated_rules_are_not_loops(healthy: str) -> None:
    assert not flagged(PREFIX + healthy + AFTER)


# --- line repeats of any content: diagram rows in a code fence ---------------------------

ROWS = ("│          │          │", "│      │", "|        |", "      │", "┃ ┃ ┃")


@pytest.mark.parametrize("row", ROWS)
def test_a_diagram_row_repeated_dozens_of_times_is_a_loop_at_any_width(row: str) -> None:
    head = "```\n┌──────────┬──────────┐\n│ Pier     │ Depth    │\n├──────────┼──────────┤\n"
    assert streamed(PREFIX + head + f"{row}\n" * 30)


@pytest.mark.parametrize("inside", [4, 8, 12])
def test_tall_boxes_drawn_tables_and_connectors_are_not_loops(inside: int) -> None:
    tall_box = (
        "┌──────────────────────────┐\n│ Tide gauge               │\n"
        + "│                          │\n" * inside
        + "└──────────────────────────┘\n"
    )
    empty_table = (
        "+------+------+------+\n| Pier | Date | Name |\n+------+------+------+\n"
        + "|      |      |      |\n" * inside
        + "+------+------+------+\n"
    )
    connector = "  ┌──────┐\n  │ gate │\n  └──┬───┘\n" + "     │\n" * inside + "  ┌──┴───┐\n"
    for drawing in (tall_box, empty_table, connector):
        assert not flagged(PREFIX + "```\n" + drawing + "```" + AFTER), drawing


# --- role markers and chat-template echoes, any script ----------------------------------

TURNS = {
    "zh": "<|system|>\n你是一个有用的助手。\n<|user|>\n请识别这张图片里的文字。\n<|assistant|>\n",
    "ja": "<|im_start|>user\nこの画像の文字を読んでください。<|im_end|>\n<|im_start|>assistant\n",
    "en": "<|user|>\nRead the text in this picture.\n<|assistant|>\nThe text says: pier 4.\n",
    "token": "<|box_start|>\n",
}


@pytest.mark.parametrize("script", TURNS)
def test_an_echoed_chat_template_is_a_loop(script: str) -> None:
    turn = TURNS[script]
    copies = max(4, 200 // len(turn))
    assert streamed(PREFIX + turn * copies)


def test_special_tokens_with_changing_content_are_not_loops() -> None:
    # Grounding output: the same tags on every element, around different text and boxes.
    elements = "".join(
        f"<|ref|>text<|/ref|><|det|>[[{40 + n}, {100 + 37 * n}, 560, {130 + 37 * n}]]<|/det|>\n"
        f"{note}\n\n"
        for n, note in enumerate(NOTES)
    )
    assert not flagged(PREFIX + elements + AFTER)


# --- block / section repeats with varying numbers ----------------------------------------


def well_rows(names: list[str]) -> str:
    rows = "".join(
        f"| 01 | {100 + 7 * n:05d} | NORTH FIELD, EAST (GAS) | {name} | {n % 3} | 000{n}00 |\n"
        for n, name in enumerate(names)
    )
    return (
        "| District | Lease | Field | Operator | Wells | Volume |\n|---|---|---|---|---|---|\n"
        + rows
    )


# Sorted by operator, as registers are: one name on a few rows in a row, then the next.
OPERATORS = ["ADAMS, J. R."] * 2 + ["BAKER, H."] + ["CARTER, GEO. M."] * 3 + ["DAVIS, W."]


def test_table_rows_that_change_a_name_and_numbers_are_records_not_a_loop() -> None:
    # Abbreviations (`GEO. M.`) inside a cell end no sentence: the row stays one record.
    assert not flagged(PREFIX + well_rows(OPERATORS + ["EVANS, R. C."] * 3) + AFTER)


FILLER = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. "
    "Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris. "
)


def test_filler_paragraphs_repeated_whole_and_ending_a_sentence_are_not_loops() -> None:
    page = f"## Figures\n\n{FILLER}{FILLER}\n\nFigure 1: the pier.\n\n{FILLER}{FILLER}"
    assert not score_output(PREFIX + page.strip()).degenerate
    # The same text cut mid-sentence at the token cap is a loop cut by the cap.
    cut = PREFIX + page + FILLER[:50]
    assert score_output(cut, finish_reason="length").degenerate


# --- phrase stutters: words in scripts without spaces, clauses said thrice ---------------

JA_WORDS = ("会議", "予算", "工事", "桟橋", "報告", "確認")
ZH_WORDS = ("北门", "水位", "泵站", "检查", "正常", "记录")


@pytest.mark.parametrize("words", [JA_WORDS, ZH_WORDS])
@pytest.mark.parametrize("copies", [3, 5])
def test_a_word_stutter_without_spaces_is_a_loop(words: tuple[str, ...], copies: int) -> None:
    line = "本日の報告：" + "".join(word * copies for word in words) + "以上です。\n"
    assert streamed(PREFIX + line + AFTER)


def test_a_latin_word_stutter_with_accents_is_still_a_loop() -> None:
    words = ("the", "café", "on", "the", "quay", "opens", "early", "née", "Dupont")
    line = " ".join(" ".join([word] * 3) for word in words) + ".\n"
    assert streamed(PREFIX + line + AFTER)


@pytest.mark.parametrize(
    "healthy",
    [
        # Natural doubling, two copies: reduplicated words, the iteration mark, laughter.
        "人人都说天天向上，我们常常慢慢地看看书，大家高高兴兴地走走停停，时时刻刻想想明天。\n",
        "時々、人々は色々な所で様々な事を考える。我々は日々努力し、少しずつ前へ進む。\n",
        "他笑着说：哈哈哈，这个桥真长！我们又走了走，看了看，然后回家吃饭睡觉。\n",
        # Parallel phrases: the same frame around different words.
        "吃一碗少一碗，见一面少一面，走一步就少一步，所以要珍惜每一天的时间和朋友。\n",
    ],
)
def test_natural_cjk_doubling_and_parallelism_are_not_loops(healthy: str) -> None:
    assert not flagged(PREFIX + healthy + AFTER)


CLAUSE = "the board approved the budget for the new pier"


@pytest.mark.parametrize("separator", [", ", " ", " and "])
def test_a_clause_said_three_times_inside_a_sentence_is_a_loop(separator: str) -> None:
    said = separator.join([CLAUSE] * 3)
    text = PREFIX + f"In March {said}, and work began in May. The tide was high.\n"
    score = score_output(text)
    assert score.degenerate and score.reason == "clause_repeat"
    assert text[score.onset :].startswith(CLAUSE)


@pytest.mark.parametrize(
    "healthy",
    [
        "Location, location, location: the pier is near the market. Very very very old.\n",
        # Whole sentences said three times (filler, refrains) are how documents repeat.
        f"{CLAUSE.capitalize()}. " * 3 + "Work began in May.\n",
        # Table cells and verse lines repeat on their own.
        "| new pier | new pier | new pier | budget | budget |\n",
        f"{CLAUSE}\n{CLAUSE}\n{CLAUSE}\n",
        "Method & float32 & bfloat16 & float32 & bfloat16 & float32 & bfloat16 \\\\\n",
    ],
)
def test_emphasis_whole_sentences_cells_and_lines_are_not_clause_loops(healthy: str) -> None:
    assert score_output(PREFIX + healthy + AFTER).reason != "clause_repeat"


PIERS = ("North pier", "South pier", "Fish quay", "Ferry berth", "Old lock", "Mill weir")


def depth_section(seed: int, heading: str = "Depth by berth", rows: int = 6) -> str:
    body = "\n".join(
        f"| {pier} | {(seed * 37 + 11 * n) % 90 + 3}.{n} | {(seed + n) % 9 + 1} |"
        for n, pier in enumerate(PIERS[:rows])
    )
    return f"## {heading}\n\n| Berth | Depth (m) | Boats |\n|---|---|---|\n{body}\n\n"


def test_a_long_section_re_emitted_with_other_numbers_is_a_loop_from_two_copies() -> None:
    text = PREFIX + depth_section(1) + depth_section(2)
    score = score_output(text)
    assert score.degenerate and score.reason == "tail_loop"
    assert score.onset is not None and text[score.onset :].lstrip().startswith("## Depth")


@pytest.mark.parametrize(
    "healthy",
    [
        # The page goes on after the two copies: judged by the online rule (three copies).
        depth_section(1) + depth_section(2) + "The survey boat will return in autumn.\n",
        # Two tables of one layout under different headings, as reports have.
        depth_section(1, "Depth in spring") + depth_section(2, "Depth in autumn"),
        # Short blocks (a two-row table) come twice on forms and coupons.
        depth_section(1, rows=2) + depth_section(2, rows=2),
    ],
)
def test_two_tables_that_are_not_a_tail_loop_stay_healthy(healthy: str) -> None:
    assert not score_output(PREFIX + healthy).degenerate


# --- counters: one number per line counting on ------------------------------------------


@pytest.mark.parametrize("step", [1, 0.5, 0.25, 10])
@pytest.mark.parametrize("between", ["\n", "\n\n"])
def test_a_counter_running_past_a_page_of_lines_is_a_loop(step: float, between: str) -> None:
    steps = DetectorConfig().counter_min_steps
    lines = "".join(f"{n * step:g}{between}" for n in range(1, steps + 20))
    assert streamed(PREFIX + "Figure 3: depth over time\n" + lines)


@pytest.mark.parametrize(
    "healthy",
    [
        "".join(f"{n}\n" for n in range(1, 29)),  # pleading-paper line numbers
        "Year\n" + "".join(f"{1950 + n}\n" for n in range(75)),  # a column of years
        "".join(f"{n * 10}\n" for n in range(11)),  # axis ticks
        "".join(f"{n % 7}\n" for n in range(200)),  # a column of digits, no counter
    ],
)
def test_line_numbers_years_and_axes_are_not_counter_loops(healthy: str) -> None:
    assert not flagged(PREFIX + healthy + AFTER)
