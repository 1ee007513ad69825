"""Loop shapes that keep their line structure: caught online within 3 periods + 64 characters
of their onset, and offline at the token cap with two copies; healthy look-alikes are not."""

import ast
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import app.degeneration.periodicity as periodicity
import app.degeneration.structure as structure
from app.degeneration import DetectorConfig, LoopDetector, score_output
from bench.detector.mixed_text import WORDS, chunks, mixed_text

PREFIX = (
    "Annual report of the river authority. The board met four times this year and reviewed "
    "the budget, the flood plan and the new pumping station.\n\n"
)


def prose(rng: random.Random, sentences: int) -> str:
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
        for _ in range(sentences)
    )


def diagram_rows(k: int) -> str:
    if k == 0:
        return "```\n┌────────────┬──────────┬──────────┐\n│ Station    │ Flow     │ Level    │\n"
    return "│            │          │          │\n"


def chat_turn(k: int) -> str:
    return (
        "<|im_start|>assistant\n## Pumping station\n\nThe new station on the east bank pumps "
        "water from the low fields into the river when the gates are closed.<|im_end|>\n"
    )


def section(k: int) -> str:
    rng = random.Random(k)
    rows = "\n".join(
        f"| {name} | {rng.randint(1, 999)}.{rng.randint(0, 9)} | {rng.randint(1, 99)}% |"
        for name in ("North gate", "South gate", "East bank")
    )
    return f"## Table 2: Flow by station\n\n| Station | Flow | Share |\n|---|---|---|\n{rows}\n\n"


def counter_sentence(k: int) -> str:
    return f"Step {k + 1}: open the north gate and check the level of the river again.\n"


def translated_word(k: int) -> str:
    word = ("water", "Wasser", "eau", "agua")[k % 4]
    return f"The station pumps {word} from the low fields into the river at night. "


def field_list(k: int) -> str:
    return f"Record {k + 7}\nStation: North gate\nFlow: {100 + 13 * k}\nLevel: {k % 5}.{k}\n\n"


def cjk_counter(k: int) -> str:
    return f"第{'一二三四五六七八九十'[k % 10]}次检查：北门的水位正常，泵站运行良好。"


def cjk_word(k: int) -> str:
    word = ("水位", "level", "水準", "niveau")[k % 4]
    return f"今天北门的{word}正常，泵站运行良好，请继续观察。\n"


def wide_section(k: int) -> str:
    """Rows with many number cells: cut inside one, the tail reads `0.0|0.0|0.0|`."""
    rng = random.Random(k)
    rows = "\n".join(
        f"| {name} | "
        + " | ".join(f"{rng.randint(1, 999)}.{rng.randint(1, 99)}" for _ in range(9))
        + " |"
        for name in ("North gate", "South gate", "East bank", "West bank")
    )
    return f"## Table 4: Flow by month\n\n| Station | Flow |\n|---|---|\n{rows}\n\n"


def short_diagram_rows(k: int) -> str:
    if k == 0:
        return "```\n+--------+--------+\n| Gate   | Flow   |\n+--------+--------+\n"
    return "|        |        |\n"


def leader_section(k: int) -> str:
    """A table of contents whose rows are mostly leader dots; one number changes per copy."""
    rows = (("Notices", "vii"), ("Trademarks", "viii"), (f"Release {k + 2} notes", "ix"))
    body = "\n".join(f"| {title} {'. ' * (40 - len(title) // 2)}| {page} |" for title, page in rows)
    return f"## Contents\n\n| Chapter | Page |\n| - | - |\n{body}\n\n"


def long_counter_sentence(k: int) -> str:
    return (
        f"Step {k + 3}: open the north gate, check the level of the river at the east bank, write "
        "it in the log book of the pumping station and report any change to the duty officer "
        "before the end of the night shift.\n"
    )


def cjk_early_word(k: int) -> str:
    word = ("水位", "level", "水準", "niveau")[k % 4]
    return f"今天{word}在北门正常，泵站运行良好，请继续观察。\n"


def wordy_row(k: int) -> str:
    """One table row re-emitted with other numbers; its words are too many for a real table's
    next row (real rows change their labels), so 3 copies are enough, as for sentences."""
    rng = random.Random(k)
    return (
        f"| Disaster benefit for hospital stays | covered diseases ({rng.randint(1, 9)} kinds) "
        f"| new infection syndrome, code U{rng.randint(10, 99)} |\n"
    )


SHAPES: dict[str, Callable[[int], str]] = {
    "wordy_row": wordy_row,
    "wide_section": wide_section,
    "short_diagram_row": short_diagram_rows,
    "leader_section": leader_section,
    "long_counter_sentence": long_counter_sentence,
    "cjk_early_word": cjk_early_word,
    "diagram_row": diagram_rows,
    "chat_turn": chat_turn,
    "section_numbers": section,
    "counter_sentence": counter_sentence,
    "translated_word": translated_word,
    "field_list": field_list,
    "cjk_counter": cjk_counter,
    "cjk_word": cjk_word,
}


def copies(make: Callable[[int], str]) -> Iterator[str]:
    k = 0
    while True:
        yield make(k)
        k += 1


def build(make: Callable[[int], str], count: int) -> tuple[str, int, float]:
    """PREFIX plus `count` copies: the text, the onset and the mean raw period."""
    units = [make(k) for k in range(count)]
    lead = ""
    if make in (
        diagram_rows,
        short_diagram_rows,
    ):  # the diagram head is the page so far; the row loops
        lead, units = units[0], [*units[1:], make(count)]
    period = sum(map(len, units)) / len(units)
    return PREFIX + lead + "".join(units), len(PREFIX + lead), period


def first_verdict_at(text: str) -> int | None:
    detector = LoopDetector()
    for piece in chunks(text, 16):
        if detector.feed(piece) is not None:
            return detector.text_length
    return None


DIAGRAMS = ("diagram_row", "short_diagram_row")


# A single sentence whose only change is its counter: healthy lists count on like that for
# up to a page (issue 39), so it needs `counter_min_copies` copies.
COUNTERS = ("counter_sentence", "cjk_counter")


def periods_to_verdict(name: str) -> int:
    """Three copies; a diagram row needs as many as a healthy drawing never stacks, a counting
    sentence as many as a healthy list never reaches."""
    if name in COUNTERS:
        return DetectorConfig().counter_min_copies
    return DetectorConfig().diagram_min_repeats if name in DIAGRAMS else 3


@pytest.mark.parametrize("name", SHAPES)
def test_shape_is_caught_online_within_three_periods_and_64_characters(name: str) -> None:
    periods = periods_to_verdict(name)
    text, onset, period = build(SHAPES[name], periods + 9)
    fired = first_verdict_at(text)
    assert fired is not None, name
    assert onset < fired <= onset + periods * period + 64, (name, fired - onset, period)


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("extra", [0.2, 0.7, 0.85])
def test_shape_cut_at_the_cap_after_two_copies_is_degenerate(name: str, extra: float) -> None:
    text, onset, period = build(SHAPES[name], 4)
    capped = text[: int(onset + (2 + extra) * period)]
    assert first_verdict_at(capped) is None  # too few copies to stop a stream
    score = score_output(capped, finish_reason="length")
    assert score.degenerate, name
    assert score.reason in ("cap_loop", "tail_loop")


def test_two_copies_without_the_cap_are_not_enough_for_a_whole_block() -> None:
    text, _, _ = build(chat_turn, 2)
    assert not score_output(text, finish_reason="stop").degenerate


# --- healthy look-alikes -----------------------------------------------------------------


def table_rows_differing_in_numbers() -> str:
    rows = "\n".join(
        f"| Cell {n}.0 | Merged Cell {n}.1 {n + 1}.1 | Cell {n}.2 |" for n in range(1, 5)
    )
    return (
        "A table with vertical spans\n\n| Header 0.0 | Header 0.1 | Header 0.2 |\n|-|-|-|\n" + rows
    )


def numeric_table(rng: random.Random) -> str:
    rows = [
        f"| {2000 + i} | {rng.uniform(1, 999):.1f} | {rng.uniform(0, 9):.2f} |" for i in range(40)
    ]
    return "| Year | Revenue | Growth |\n|---|---|---|\n" + "\n".join(rows) + "\n"


def ascii_box() -> str:
    inner = "│                │                │\n"
    return (
        "```\n┌────────────────┬────────────────┐\n"
        + inner * 2
        + "└────────────────┴────────────────┘\n```\n"
    )


def sign_in_sheet() -> str:
    return (
        "SIGN-IN SHEET\n\n" + "Name: ______________  Date: __/__/2024  Signature: ________\n" * 12
    )


def toc(rng: random.Random) -> str:
    return "\n".join(
        f"{n}.{rng.randint(1, 9)} {rng.choice(WORDS).title()} {rng.choice(WORDS)} "
        + ". " * rng.randint(10, 40)
        + str(rng.randint(1, 300))
        for n in range(1, 40)
    )


def numbered_sections_of_filler(rng: random.Random) -> str:
    lorem = "Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod. "
    return "".join(f"## Section {n}\n\n{lorem * 3}\n\n" for n in rng.sample(range(9), 5))


def ordinal_list() -> str:
    ordinals = ("First", "Second", "Third", "Fourth", "Fifth")
    return "\n".join(f"{i}. {word} item with numId 2" for i, word in enumerate(ordinals, 1))


HEALTHY: dict[str, Callable[[random.Random], str]] = {
    "rows-differing-in-numbers": lambda rng: table_rows_differing_in_numbers(),
    "numeric-table": numeric_table,
    "ascii-box": lambda rng: ascii_box(),
    "sign-in-sheet": lambda rng: sign_in_sheet(),
    "toc-leaders": toc,
    "numbered-filler-sections": numbered_sections_of_filler,
    "ordinal-list": lambda rng: ordinal_list(),
}


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_tables_leaders_and_forms_are_not_loops(name: str) -> None:
    for seed in range(3):
        text = prose(random.Random(seed), 4) + "\n\n" + HEALTHY[name](random.Random(seed))
        text += "\n\n" + prose(random.Random(seed + 9), 3)
        assert first_verdict_at(text) is None, (name, seed)
        assert not score_output(text).degenerate, (name, seed)


# --- incremental cost --------------------------------------------------------------------


def work_per_character(size: int, monkeypatch: pytest.MonkeyPatch) -> float:
    """Characters compared or keyed by the detector per character fed (a count, not time)."""
    work = [0]
    compare, segment = periodicity.is_periodic, structure.StructureTracker._segment

    def counted_compare(buffer: str, end: int, period: int, length: int) -> bool:
        work[0] += length
        return compare(buffer, end, period, length)

    def counted_segment(self, raw, raw_base, start, end):  # type: ignore[no-untyped-def]
        work[0] += end - start
        return segment(self, raw, raw_base, start, end)

    with monkeypatch.context() as patch:
        patch.setattr("app.degeneration.periodic_loops.is_periodic", counted_compare)
        patch.setattr(structure.StructureTracker, "_segment", counted_segment)
        detector = LoopDetector()
        for piece in chunks(mixed_text(size, seed=3), 16):
            if detector.feed(piece) is not None:
                detector.reset()
    return work[0] / size


def test_feed_cost_per_character_does_not_grow_with_the_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    short = work_per_character(100_000, monkeypatch)
    long = work_per_character(800_000, monkeypatch)
    assert long <= 1.25 * short + 1  # no rescans: the work is a property of the text's kind
    assert long < 40  # each character is compared or keyed a bounded number of times


def test_the_detector_imports_only_the_standard_library_and_itself() -> None:
    # The vLLM plugin runs it inside the server's process: nothing else of Folio may come along.
    package = Path(structure.__file__).parent
    for module in package.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                allowed = top in sys.stdlib_module_names or name.startswith("app.degeneration")
                assert allowed, f"{module.name} imports {name}"


@pytest.mark.parametrize("name", SHAPES)
def test_verdict_does_not_depend_on_how_the_stream_is_cut(name: str) -> None:
    text, _, _ = build(SHAPES[name], periods_to_verdict(name) + 9)
    verdicts = set()
    for size in (1, 5, 16, 61):
        detector = LoopDetector()
        verdict = next((v for piece in chunks(text, size) if (v := detector.feed(piece))), None)
        assert verdict is not None, (name, size)
        verdicts.add((verdict.onset, verdict.period, verdict.kind))
    assert len(verdicts) == 1, (name, verdicts)
