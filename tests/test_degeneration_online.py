"""The online LoopDetector: catches loops early, leaves natural repetition alone."""

import random
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.degeneration import DetectorConfig, LoopDetector, LoopVerdict
from bench.detector.mixed_text import WORDS


def feed_in_chunks(
    text: str, size: int = 16, config: DetectorConfig | None = None
) -> tuple[LoopVerdict | None, int | None]:
    """Stream `text`; return the verdict and the text length when it first appeared."""
    detector = LoopDetector(config)
    for start in range(0, len(text), size):
        verdict = detector.feed(text[start : start + size])
        if verdict is not None:
            return verdict, detector.text_length
    return detector.finish(), None


def prose(rng: random.Random, sentences: int) -> str:
    parts = []
    for _ in range(sentences):
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 18))]
        parts.append(" ".join(words).capitalize() + ".")
    return " ".join(parts) + "\n\n"


# --- loops are caught -------------------------------------------------------------------


def test_symbol_run_is_a_char_run_loop() -> None:
    verdict, _ = feed_in_chunks("Result: 5" + "!" * 100)
    assert verdict is not None
    assert (verdict.kind, verdict.period, verdict.onset) == ("char_run", 1, 9)


def test_letter_runs_need_longer_runs_than_symbols() -> None:
    assert feed_in_chunks("Account XXXXXXXXXXXXXXXX closed.")[0] is None
    verdict, _ = feed_in_chunks("a" * 200)
    assert verdict is not None and verdict.kind == "char_run"


def test_phrase_loop_reports_period_and_onset() -> None:
    prefix = prose(random.Random(1), 3)
    verdict, _ = feed_in_chunks(prefix + "I am not sure about that. " * 30)
    assert verdict is not None
    assert verdict.kind == "phrase"
    assert verdict.period == len("I am not sure about that. ")
    # The run may start a few characters early when the prefix ends like the unit (`.`).
    assert len(prefix) - 4 <= verdict.onset <= len(prefix)


def test_line_loop() -> None:
    verdict, _ = feed_in_chunks("Greeting card\n" + "Happy birthday to you!\n" * 30)
    assert verdict is not None and verdict.kind == "line"


def test_block_loop() -> None:
    block = "Name: John Smith\nAge: 42\nCity: Paris\n"
    verdict, _ = feed_in_chunks("Records\n" + block * 20)
    assert verdict is not None and verdict.kind == "block"
    assert verdict.period == len(block)


def test_loop_with_incrementing_numbers_is_caught_as_drift() -> None:
    blocks = "".join(
        f"{i}\n00:05:{i:02d},580 --> 00:05:{i + 1:02d},180\nSo I am going to go over to the next"
        f" slide now.\n\n"
        for i in range(10, 40)
    )
    verdict, _ = feed_in_chunks(blocks)
    assert verdict is not None
    assert verdict.drift


def test_cjk_loop_without_spaces() -> None:
    verdict, _ = feed_in_chunks("总序\n\n" + "这是一个测试句子，" * 30)
    assert verdict is not None and verdict.kind == "phrase"
    assert verdict.period == len("这是一个测试句子，")


def test_json_escaped_newlines_loop() -> None:
    escaped = "1 teaspoon garlic\\n1 teaspoon onion powder\\n1 teaspoon salt\\n"
    verdict, _ = feed_in_chunks('{"text": "Ingredients:\\n' + escaped * 20)
    assert verdict is not None and verdict.kind == "block"


def test_line_loop_with_spelling_drift() -> None:
    variants = ["Hakate Toolbox", "Hakete Toolbox", "HakateToolbox", "Hekate Toolbox"]
    rng = random.Random(3)
    lines = [rng.choice(variants) for _ in range(40)]
    verdict, _ = feed_in_chunks("\n\n".join(lines))
    assert verdict is not None and verdict.kind == "line"


def test_empty_html_rows_loop() -> None:
    verdict, _ = feed_in_chunks("<table>" + "<tr><td></td><td></td><td></td></tr>" * 80)
    assert verdict is not None


def test_numeric_token_loop() -> None:
    verdict, _ = feed_in_chunks("Values: " + "-3 " * 400)
    assert verdict is not None and verdict.period == 3


def test_blank_loop() -> None:
    verdict, _ = feed_in_chunks("Title\n" + " " * 5000)
    assert verdict is not None
    assert (verdict.kind, verdict.onset) == ("char_run", len("Title"))


def test_control_characters_and_replacement_characters() -> None:
    assert feed_in_chunks("data\x00" + "\x00" * 60)[0] is not None
    assert feed_in_chunks("broken \ufffd\ufffd text " + "\ufffd" * 300 + " end")[0] is None
    # 24 lines counting on: a list (300 would be a counter loop, issue 39).
    mixed = "".join(f"cell\x07{i}\x1b[0m\ufffd line {i}\r\n" for i in range(24))
    assert feed_in_chunks(mixed)[0] is None


@pytest.mark.parametrize("period", [2, 3, 5, 8, 13, 21, 40, 64, 100, 250, 500, 1000])
def test_latency_is_within_three_periods_plus_64(period: int) -> None:
    rng = random.Random(period)
    unit = ""
    while len(unit) < period:
        unit += rng.choice(WORDS) + rng.choice([" ", " ", ", ", "\n"])
    unit = unit[:period]
    prefix = prose(rng, 4)
    verdict, fired_at = feed_in_chunks(prefix + unit * (4 + 4000 // period))
    assert verdict is not None and fired_at is not None
    assert fired_at - len(prefix) <= 3 * period + 64


# --- natural repetition is left alone ---------------------------------------------------


def toc_with_leader_dots(rng: random.Random) -> str:
    lines = []
    for number in range(1, 40):
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))).title()
        leader = "." * rng.randint(20, 200) if number % 2 else ". " * rng.randint(10, 60)
        lines.append(f"{number}.{rng.randint(1, 9)} {title} {leader} {rng.randint(1, 300)}")
    return "Contents\n\n" + "\n".join(lines)


def form_with_blanks(rng: random.Random) -> str:
    labels = ["Name", "Date", "Address", "Signature", "Phone", "Employer", "City"]
    lines = [f"{rng.choice(labels)}: " + "_" * rng.randint(10, 60) for _ in range(15)]
    return "APPLICATION FORM\n\n" + "\n".join(lines) + "\n" + "_" * 400 + "\n"


def markdown_table(rng: random.Random, rows: int) -> str:
    columns = rng.randint(3, 12)
    header = "| " + " | ".join(rng.choice(WORDS).title() for _ in range(columns)) + " |"
    lines = [header, "|" + " --- |" * columns]
    for _ in range(rows):
        cells = [rng.choice(["0.00", "0.00", f"{rng.random():.2f}", ""]) for _ in range(columns)]
        lines.append(f"| {rng.choice(WORDS)} | " + " | ".join(cells[1:]) + " |")
    return "\n".join(lines) + "\n\n"


def numbered_lists(rng: random.Random) -> str:
    varied = [f"{i}. {' '.join(rng.choice(WORDS) for _ in range(5))}" for i in range(1, 60)]
    same_text = [f"- List item {i}" for i in range(1, 30)]
    return "\n".join(varied + same_text)


def paged_report(rng: random.Random) -> str:
    pages = [f"ACME Corp - Annual Report 2023 - Page {n}\n\n{prose(rng, 5)}" for n in range(9)]
    return "".join(pages)


def cjk_prose(rng: random.Random) -> str:
    common = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同"
    return "".join(
        "".join(rng.choice(common) for _ in range(rng.randint(20, 60))) + "。" for _ in range(60)
    )


def filler_paragraphs(rng: random.Random) -> str:
    lorem = (
        "Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod "
        "tempor invidunt ut labore et dolore magna aliquyam erat, sed diam voluptua. "
    )
    disclaimer = "This document is provided for information only and is not legal advice.\n\n"
    return disclaimer + (lorem * 3).strip() + "\n\n" + prose(rng, 4) + disclaimer + prose(rng, 3)


@pytest.mark.parametrize(
    "build",
    [
        toc_with_leader_dots,
        form_with_blanks,
        lambda rng: markdown_table(rng, 40),
        numbered_lists,
        paged_report,
        cjk_prose,
        filler_paragraphs,
    ],
    ids=["toc", "form", "table", "lists", "headers", "cjk", "boilerplate"],
)
def test_natural_repetition_is_healthy(build: Callable[[random.Random], str]) -> None:
    for seed in range(5):
        text = build(random.Random(seed))
        verdict, _ = feed_in_chunks(text)
        assert verdict is None, (seed, verdict)


def test_merged_cells_repeated_across_a_row_are_healthy() -> None:
    merged = " triple inter-annotator mAP @0.5-0.95 (%) |"
    row = "|  | % of Total | % of Total | % of Total |" + merged * 7
    text = row + "\n| - | - | - |" + " - |" * 9 + "\n| Caption | 22524 | 2.04 | 1.77 |\n"
    assert feed_in_chunks(text)[0] is None


# --- properties -------------------------------------------------------------------------

word = st.sampled_from(WORDS)
separator = st.sampled_from([" ", " ", ", ", ". ", "\n", " | "])
phrase_unit = st.lists(st.tuples(word, separator), min_size=1, max_size=40).map(
    lambda pairs: "".join(w + s for w, s in pairs)
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.lists(st.tuples(word, separator), max_size=60).map(
        lambda pairs: "".join(w + s for w, s in pairs)
    ),
    unit=phrase_unit.filter(lambda u: "|" not in u),
    chunk=st.integers(min_value=1, max_value=64),
)
def test_injected_loop_is_caught(prefix: str, unit: str, chunk: int) -> None:
    repeats = max(40, (3 * len(unit) + 200) // len(unit))
    verdict, _ = feed_in_chunks(prefix + unit * repeats, size=chunk)
    assert verdict is not None
    assert verdict.onset <= len(prefix) + len(unit)


def natural_text(rng: random.Random) -> str:
    builders = [prose, markdown_table, toc_with_leader_dots, form_with_blanks, cjk_prose]
    parts = []
    for _ in range(6):
        build = rng.choice(builders)
        parts.append(
            build(rng, rng.randint(2, 12)) if build in (prose, markdown_table) else build(rng)
        )
    return "\n".join(parts)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_natural_text_is_not_a_loop(seed: int) -> None:
    assert feed_in_chunks(natural_text(random.Random(seed)))[0] is None


# --- incremental cost and memory ---------------------------------------------------------


def loop_samples() -> list[str]:
    rng = random.Random(11)
    return [
        prose(rng, 10) + "It is what it is. " * 40,
        prose(rng, 30) + "| Total | 12.5 | yes |\n" * 60,
        cjk_prose(rng) + "不\n妙\n神\n心\n" * 50,
        prose(rng, 5) + "!" * 200 + prose(rng, 5),
        "\n".join(["Hakate Toolbox", "Hekate Toolbox"] * 30),
    ]


@pytest.mark.parametrize("index", range(5))
def test_verdict_does_not_depend_on_chunk_size(index: int) -> None:
    text = loop_samples()[index]
    reference, _ = feed_in_chunks(text, size=16)
    assert reference is not None
    for size in (1, 3, 50, 1000, len(text)):
        assert feed_in_chunks(text, size=size)[0] == reference, size


def test_memory_stays_bounded_on_a_megabyte() -> None:
    rng = random.Random(5)
    detector = LoopDetector()
    # Two normalised tails (exact, shape) up to 2x the window each, raw tail up to 8x, plus
    # one check stride.
    bound = 12 * detector.config.tail_window + detector.config.check_stride
    fed = 0
    while fed < 1_000_000:
        text = prose(rng, 20) + markdown_table(rng, 10) + cjk_prose(rng)
        assert detector.feed(text) is None
        fed += len(text)
        assert detector.buffered_chars <= bound
    assert detector.text_length == fed


def test_verdict_is_sticky_until_reset() -> None:
    detector = LoopDetector()
    first = detector.feed("ha! " + "!" * 50)
    assert first is not None
    assert detector.feed("more healthy text follows here") == first
    assert detector.text_length == len("ha! ") + 50 + len("more healthy text follows here")
    detector.reset()
    assert (detector.verdict, detector.text_length) == (None, 0)


def test_config_rejects_a_window_too_small_for_the_periods() -> None:
    with pytest.raises(ValueError):
        DetectorConfig(max_period=2048, tail_window=4096)


def test_a_block_of_as_many_lines_as_the_history_does_not_crash() -> None:
    # A 16-line block coming back: each line's copy is the oldest line the tracker remembers.
    lines = [" ".join(WORDS[index : index + 2 + index]) + ".\n" for index in range(16)]
    detector = LoopDetector()
    for line in lines * 3:
        detector.feed(line)
    assert detector.verdict is not None and detector.verdict.kind == "block"


def test_a_run_of_mixed_leaders_and_rules_is_a_loop() -> None:
    """A model lost on a contents page: dashes, dots and spaces, never periodic, no words."""
    rng = random.Random(7)
    babble = "".join(rng.choice(["-" * rng.randint(3, 30), "." * rng.randint(3, 20), " ", "..."])
                     for _ in range(400))  # fmt: skip
    head = "Contents\nopen ........ 12\ncreate "
    verdict, _ = feed_in_chunks(head + babble)
    assert verdict is not None
    assert (verdict.kind, verdict.onset) == ("char_run", len(head.rstrip()))  # after "create"
    assert verdict.covered >= DetectorConfig().fill_min_covered


def test_contents_pages_and_long_rules_are_not_loops() -> None:
    rng = random.Random(8)
    contents = "".join(
        f"{rng.choice(['open', 'close', 'read the file'])} {'.' * rng.randint(10, 60)} "
        f"{rng.randint(1, 400)}\n"
        for _ in range(80)
    )
    assert feed_in_chunks(contents)[0] is None
    wide_rule = "Table 1\n" + "-=" * 450 + "\nName and value\n"  # 900 characters, then words
    assert feed_in_chunks(wide_rule)[0] is None
