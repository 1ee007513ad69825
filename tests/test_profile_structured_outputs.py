"""The loop detector on each profile's structured formats: healthy answers full of repeated
markup (OTSL `<ecel>` runs, DocTags `<loc_*>` runs, layout-JSON cell lists, tables of empty
cells) stream through without a verdict, and the same formats looping are caught.

Synthetic answers (seeded), shaped as each format's official parser reads them."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest

from app.degeneration import LoopDetector
from app.pdf.samples import page_text
from app.profiles import BUILTIN
from app.profiles.parsers import parse_answer

WORDS = page_text(7).split()


def verdict_of(text: str, chunk: int = 4) -> object | None:
    detector = LoopDetector()
    for start in range(0, len(text), chunk):
        found = detector.feed(text[start : start + chunk])
        if found is not None:
            return found
    return detector.finish()


def otsl_table(rng: random.Random, rows: int = 25) -> str:
    def cell() -> str:
        return f"<fcel>{rng.randint(1, 9999)}" if rng.random() < 0.35 else "<ecel>"

    body = "".join("".join(cell() for _ in range(8)) + "<nl>" for _ in range(rows))
    return f"<doctag><otsl><loc_30><loc_130><loc_470><loc_400>{body}</otsl></doctag>"


def doctags_page(rng: random.Random) -> str:
    elements = []
    for _ in range(30):
        x, y = rng.randint(0, 449), rng.randint(0, 489)
        text = " ".join(rng.sample(WORDS, 8))
        elements.append(f"<text><loc_{x}><loc_{y}><loc_{x + 50}><loc_{y + 10}>{text}</text>")
    return "<doctag>" + "".join(elements) + "</doctag>"


def dots_cells(rng: random.Random) -> str:
    cells = [
        {
            "bbox": sorted(rng.randint(0, 900) for _ in range(4)),
            "category": "Text",
            "text": " ".join(rng.sample(WORDS, 10)),
        }
        for _ in range(30)
    ]
    return json.dumps(cells)


def empty_cell_table(rng: random.Random) -> str:
    def row() -> str:
        cells = (f"<td>{rng.randint(1, 99) if rng.random() < 0.3 else ''}</td>" for _ in range(8))
        return "<tr>" + "".join(cells) + "</tr>"

    return "<table>" + "".join(row() for _ in range(30)) + "</table>"


HEALTHY = [
    ("granite-docling", otsl_table),
    ("granite-docling", doctags_page),
    ("dots-ocr-layout", dots_cells),
    ("markdown", empty_cell_table),
]


@pytest.mark.parametrize(("profile_id", "make"), HEALTHY)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_healthy_structured_answers_draw_no_verdict(
    profile_id: str, make: Callable[[random.Random], str], seed: int
) -> None:
    answer = make(random.Random(seed))
    assert verdict_of(answer) is None
    parse_answer(BUILTIN[profile_id].response, answer)  # and they read in their format


LOOPS = [
    # dots.ocr#245: a table that never ends, one empty row after another
    "<table><tr><td>Total</td><td>12</td></tr>" + "<tr><td></td><td></td></tr>" * 200,
    # the same layout cell written again and again
    json.dumps(
        [{"bbox": [10, 10, 900, 60], "category": "Text", "text": " ".join(WORDS[:30])}] * 40
    ),
    # DocTags: one text element repeated with the same location
    "<doctag>"
    + "<text><loc_10><loc_20><loc_400><loc_30>"
    + " ".join(WORDS[:12])
    + "</text>" * 1
    + ("<text><loc_10><loc_20><loc_400><loc_30>" + " ".join(WORDS[:12]) + "</text>") * 40,
]


@pytest.mark.parametrize("loop", LOOPS)
def test_the_same_formats_looping_are_caught(loop: str) -> None:
    assert verdict_of(loop) is not None
