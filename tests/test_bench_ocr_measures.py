"""The fallback-worth bench's measures: edit distance, CER and table rows."""

from __future__ import annotations

import random

from bench.ocr.measures import cer, edit_distance, rows_found, table_rows


def _levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def test_the_bit_parallel_edit_distance_agrees_with_the_textbook_one() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = "".join(rng.choice("ab c") for _ in range(rng.randint(0, 40)))
        b = "".join(rng.choice("abcd ") for _ in range(rng.randint(0, 40)))
        assert edit_distance(a, b) == _levenshtein(a, b), (a, b)


def test_cer_counts_edits_per_reference_character_with_spacing_collapsed() -> None:
    assert cer("the  cat\nsat", "the cat sat") == 0.0
    assert cer("the bat sat", "the cat sat") == 1 / 11


def test_table_rows_are_found_across_markdown_and_html() -> None:
    reference = (
        "<table><tr><th>Year</th><th>Sales</th></tr>"
        "<tr><td>2024</td><td>1,136</td></tr><tr><td>2023</td><td>980</td></tr></table>"
    )
    candidate = "| Year | Sales |\n|---|---|\n| 2024 | 1,136 |\n| 2023 | 981 |"
    assert table_rows(candidate) == [["year", "sales"], ["2024", "1,136"], ["2023", "981"]]
    assert rows_found(candidate, reference) == (2, 3)
    assert rows_found("Year Sales 2024 1,136", reference) == (0, 3)


def test_a_delimiter_row_of_single_hyphens_is_no_table_row() -> None:
    # docling writes its tables' delimiter rows so; GFM asks one hyphen a cell
    reference = "| Column | Type |\n| - | - |\n| USAGE | VARCHAR(7) |"
    assert table_rows(reference) == [["column", "type"], ["usage", "varchar(7)"]]
