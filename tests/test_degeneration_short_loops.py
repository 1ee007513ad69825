"""Short exact loops (a token or two repeated: `0000`, `1 1 1`, `-3 -3 -3`) are called within
a few dozen characters, while healthy text that repeats short units stays unflagged: table
rules, leader dots, form blanks, box drawing, `= = =`, page-number rows, repeated cells."""

import json
import os
import random
from pathlib import Path

import pytest

from app.degeneration import LoopDetector, score_output

PREFIX = "Quarterly figures of the river authority, as reported to the board.\n\n"


def fired_at(text: str, chunk: int = 16) -> int | None:
    detector = LoopDetector()
    for start in range(0, len(text), chunk):
        if detector.feed(text[start : start + chunk]) is not None:
            return detector.text_length
    return None


@pytest.mark.parametrize(
    ("unit", "within"),
    [
        ("0", 96),  # a JSON number that never ends (outlines #847)
        ("1 ", 96),  # two characters, one token each
        ("-3 ", 112),  # the `-3 -3 -3` number loop of mlx-vlm #549
        ("-33 ", 128),
        ("7", 96),
    ],
)
def test_short_numeric_loop_is_called_within_a_few_dozen_characters(unit: str, within: int) -> None:
    text = PREFIX + unit * 400
    at = fired_at(text)
    assert at is not None
    assert at - len(PREFIX) <= within  # before: 256+ characters for any of them


def test_number_loop_after_a_json_key_is_caught() -> None:
    text = '{ "rating" : 0.' + "0" * 300
    verdict = LoopDetector().feed(text)
    assert verdict is not None and verdict.period == 1 and verdict.onset <= 20


def test_short_loop_verdict_reports_its_unit_and_onset() -> None:
    detector = LoopDetector()
    for start in range(0, 600, 16):
        detector.feed((PREFIX + "-3 " * 200)[start : start + 16])
    verdict = detector.verdict
    assert verdict is not None
    assert verdict.period == 3 and verdict.unit.strip() == "-3"
    assert abs(verdict.onset - len(PREFIX)) <= 3


def leader_dots() -> str:
    return "".join(f"{title} {'.' * 70} {page}\n" for page, title in enumerate(CHAPTERS, 3))


def dotted_leaders() -> str:
    return "".join(f"{title} {'. ' * 35}{page}\n" for page, title in enumerate(CHAPTERS, 3))


def table_rules() -> str:
    head = "| " + " | ".join(f"Q{k}" for k in range(1, 25)) + " |\n"
    return head + "|" + "---|" * 24 + "\n" + "|" + " 0 |" * 24 + "\n"


def form_blanks() -> str:
    return "Name: " + "_" * 80 + "\nSignature: " + "_" * 80 + "\n"


def box_drawing() -> str:
    return "┌" + "─" * 90 + "┐\n│ Station │\n└" + "─" * 90 + "┘\n"


def equal_rules() -> str:
    return "= " * 60 + "\nSection 2\n" + "- " * 60 + "\n"


def page_numbers() -> str:
    return " ".join(str(page) for page in range(1, 120)) + "\n"


def zero_matrix() -> str:
    # 12 x 12: past 256 zeros the exact view's numeric threshold calls any run of zeros
    row = " ".join("0" for _ in range(12))
    return "\n".join(row for _ in range(12)) + "\n"


def ones_column() -> str:
    return "Count\n" + "1\n" * 60


def money_row() -> str:
    return "Total " + "0.00 " * 14 + "\n" + "Change " + "0.0 " * 14 + "\n"


def repeated_cells() -> str:
    return "| Item | " + " | ".join(["1"] * 30) + " |\n"


def binary_mask() -> str:
    return "Mask 255.255.255.255 = 11111111.11111111.11111111.11111111 (/32)\n"


CHAPTERS = ("Introduction", "Methods", "Results", "Discussion", "Appendix")
LOOK_ALIKES = {
    "leader dots": leader_dots,
    "spaced leader dots": dotted_leaders,
    "table rules and a row of zero cells": table_rules,
    "form blanks": form_blanks,
    "box drawing": box_drawing,
    "= = = and - - - rules": equal_rules,
    "page-number row": page_numbers,
    "zero matrix over many lines": zero_matrix,
    "column of ones": ones_column,
    "rows of 0.00 and 0.0 cells": money_row,
    "repeated table cells": repeated_cells,
    "binary netmask": binary_mask,
}


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_healthy_short_repeats_are_not_loops(name: str) -> None:
    text = PREFIX + LOOK_ALIKES[name]() + "\nThe board approved the figures.\n"
    assert fired_at(text) is None
    assert not score_output(text).degenerate


def _dev_corpus() -> Path:
    shared = os.environ.get("FOLIO_SHARED_DIR")
    root = Path(shared) if shared else Path(__file__).resolve().parents[2] / "shared"
    return root / "corpus" / "degeneration_dev.jsonl"


def test_real_number_loop_from_the_dev_corpus_is_caught_early() -> None:
    path = _dev_corpus()
    if not path.is_file():
        pytest.skip("shared corpus not present")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    row = next((r for r in rows if r["id"] == "deg-mlxvlm-549-dsocr-number-loop"), None)
    if row is None:
        pytest.skip("deg-mlxvlm-549 not in this corpus")
    at = fired_at(row["text"])
    assert at is not None and at <= 128


def test_exact_and_shape_views_of_ascii_match_the_unicode_tables() -> None:
    from app.degeneration.charclass import (
        EXACT_TABLE,
        collapse_numbers,
        exact_view,
        shape_view,
    )

    rng = random.Random(4)
    alphabet = [chr(code) for code in range(128)] + ["é", "０", "一", "\u200b", "\u3000"]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        exact = text.translate(EXACT_TABLE)
        assert exact_view(text) == exact
        if exact.isascii():  # the byte-table path; other text keeps the dict tables
            digits_to_zero = exact.translate({ord(d): ord("0") for d in "0123456789"})
            assert shape_view(exact) == collapse_numbers(digits_to_zero)


def test_word_stutter_is_stopped_online_at_the_end_of_its_first_line() -> None:
    sentence = "I see what you did there and the answer is still five no matter how"
    line = " ".join(" ".join([word] * 4) for word in sentence.split(" ")) + "!\n"
    text = "Me: what is 2+3\nAI: The answer is 5!\n\nAI: " + line * 6
    at = fired_at(text)
    assert at is not None and at <= len(text) - 5 * len(line) + 16


def test_emphasis_and_reduplication_in_prose_are_not_stutter() -> None:
    text = (
        PREFIX
        + "It was very very very cold, and we said no no no to the offer; the bye-bye song "
        + "and the ha ha ha of the crowd went on. Then the board went home.\n"
    ) * 3
    assert fired_at(text) is None
