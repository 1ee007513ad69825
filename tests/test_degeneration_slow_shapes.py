"""Loop shapes the detector used to catch late or never (issue 39): a diagram loop inside a
code block nested in a ```` ```markdown ```` answer, ordinal counters, loops inside the string
values of a JSON answer. Each is caught within the characters stated here, counted from the
loop's first copy; its healthy look-alike is not flagged."""

import json
import random
import zlib
from collections.abc import Callable

import pytest

from app.degeneration import DetectorConfig, LoopDetector, score_output
from app.degeneration.json_strings import JsonStringReader
from bench.detector.false_alarms import healthy_shapes
from bench.detector.mixed_text import chunks
from tests.test_degeneration_families import NOTES

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
    text, _, _ = counting(lambda k: f"- The {ordinal(k)} item of the list\n", 24)
    assert not flagged(text + AFTER)


# --- healthy pages of the shapes behind today's false alarms --------------------------------

FIXED = tuple(shape.name for shape in healthy_shapes())


@pytest.mark.parametrize("name", FIXED)
def test_healthy_pages_of_false_alarm_shapes_are_not_stopped(name: str) -> None:
    shape = next(s for s in healthy_shapes() if s.name == name)
    detector = LoopDetector()
    assert not any(detector.feed(piece) is not None for piece in chunks(shape.text, 16))


# --- loops inside the string values of a JSON answer ---------------------------------------

JSON_CONFIG = DetectorConfig(json_strings=1)
NO_JSON = DetectorConfig(json_strings=0)
MANIFEST = ("tea", "salt", "rice", "wool", "iron", "coal", "flax")


def dots_answer(lines: list[str], cells_before: int = 3) -> str:
    """A dots.ocr-style layout answer: cells with boxes, the last one's text looping."""
    cells = [
        {"bbox": [40, 60 + 90 * k, 900, 140 + 90 * k], "category": "Text", "text": NOTE}
        for k, NOTE in enumerate(PREFIX.split(". ")[:cells_before])
    ]
    cells.append({"bbox": [40, 400, 900, 1600], "category": "Text", "text": "\n".join(lines)})
    return json.dumps(cells, ensure_ascii=False)


def drifting_lines(copies: int) -> list[str]:
    """A line loop whose copies drift in spelling (`Hakate`/`Hekate`), as real ones do."""
    rng = random.Random(copies)
    spellings = ("Hakate", "Hekate", "HakateT", "Hakatee")
    return [
        f"Cargo of {rng.choice(MANIFEST[:2])} for the {rng.choice(spellings)} quay, "
        "loaded by the night crew"
        for _ in range(copies)
    ]


def test_a_line_loop_inside_a_json_string_value_is_caught_with_json_strings() -> None:
    text = dots_answer(drifting_lines(200))
    loop_start = text.index("Cargo of")
    detector = LoopDetector(JSON_CONFIG)
    fired = next((detector.text_length for p in chunks(text, 16) if detector.feed(p)), None)
    assert fired is not None and fired - loop_start <= 1_000, fired
    verdict = detector.verdict
    assert verdict is not None and loop_start - 64 <= verdict.onset <= fired
    assert text[verdict.onset : verdict.onset + 8] in text[loop_start - 64 :]


def test_the_same_json_loop_is_caught_later_without_the_string_view() -> None:
    text = dots_answer(drifting_lines(200))
    loop_start = text.index("Cargo of")
    plain = next(
        (d.text_length for d in [LoopDetector(NO_JSON)] for p in chunks(text, 16) if d.feed(p)),
        None,
    )
    json_view = next(
        (d.text_length for d in [LoopDetector(JSON_CONFIG)] for p in chunks(text, 16) if d.feed(p)),
        None,
    )
    assert json_view is not None
    assert plain is None or plain - loop_start > json_view - loop_start


def test_a_healthy_json_layout_answer_is_not_a_loop_with_json_strings() -> None:
    # Many cells of one category, boxes counting down the page, short repeated values.
    cells = [
        {"bbox": [40, 60 + 30 * k, 900, 80 + 30 * k], "category": "List-item", "text": line}
        for k, line in enumerate(f"{k + 1}. {note}" for k, note in enumerate(NOTES))
    ]
    cells += [{"bbox": [40, 1500, 900, 1540], "category": "Page-footer", "text": "Page 3"}]
    text = json.dumps(cells, ensure_ascii=False)
    detector = LoopDetector(JSON_CONFIG)
    assert not any(detector.feed(piece) for piece in chunks(text, 16))
    assert detector.finish() is None


def test_json_string_values_decode_the_same_however_the_stream_is_cut() -> None:
    text = dots_answer(['Line one "quoted" \\ back', "Zweite Zeile \u00e9 \u4e2d"])
    text = text.replace("\u00e9", "\\u00e9")
    decoded = set()
    for size in (1, 2, 3, 7, 16, 1000):
        reader = JsonStringReader()
        decoded.add("".join(reader.feed(piece) for piece in chunks(text, size)))
    assert len(decoded) == 1
    (value,) = decoded
    assert 'Line one "quoted" \\ back\nZweite Zeile é 中' in value
    assert "bbox" not in value and "category" not in value  # keys are not text


def test_a_filler_run_beyond_two_mrz_lines_is_a_loop() -> None:
    need = DetectorConfig().mrz_fill_run_min
    text = PREFIX + "P<UTOERIKSSON<<ANNA<MARIA" + "<" * 400
    latency = caught_after(text, text.index("<<"))
    assert latency is not None and latency <= need + 32  # checks every 16 characters


def test_a_cell_looping_in_a_row_is_caught_past_the_widest_healthy_row() -> None:
    need = DetectorConfig().row_cell_min_repeats
    head = "| Item | " + " | ".join(f"{d:02d}" for d in range(1, 31)) + " |\n|" + "---|" * 31 + "\n"
    cell = " Not applicable |"
    text = PREFIX + head + "| Status |" + cell * 200
    latency = caught_after(text, text.index(cell))
    assert latency is not None and latency <= (need + 1) * len(cell) + 64, latency
    html = PREFIX + "<table><tr>" + "<td>Pt Values</td>" * 200
    latency = caught_after(html, html.index("<td>"))
    assert latency is not None and latency <= (need + 1) * len("<td>Pt Values</td>") + 64


def test_a_separator_row_looping_past_its_header_is_caught() -> None:
    words = ["north", "south", "east", "west", "upper", "lower", "inner", "outer", "old", "new"]
    heads = [f"{a} {b} gate level (m)" for a in words for b in words[:4]]
    header = "| " + " | ".join(heads) + " |\n"
    text = PREFIX + header + "|" + "---|" * 2000
    onset = text.index("|---")
    latency = caught_after(text, onset)
    margin = DetectorConfig().separator_margin
    assert latency is not None and len(header) < latency <= len(header) + margin + 32


# --- a lone bullet per line ----------------------------------------------------------------


def test_lone_bullets_stacked_past_a_healthy_list_are_caught_early() -> None:
    # Before issue 39 the bullets were a fill run: 1,024 copies, ~2,000 characters.
    need = DetectorConfig().lone_mark_min_repeats
    for mark, between in (("•", "\n"), ("•", "\n\n"), ("}", "\n"), ("→", "\n")):
        text = PREFIX + f"{mark}{between}" * 3000
        latency = caught_after(text, len(PREFIX))
        assert latency is not None and latency <= need * len(mark + between) + 16, (mark, latency)


def test_a_few_empty_bullets_and_closing_braces_are_not_a_loop() -> None:
    empty_bullets = "Checklist:\n" + "•\n" * 8 + "Signed: ________\n"
    names = ("open", "ready", "tide", "gate", "pump", "level", "alarm", "night")
    code = "```c\n" + "".join("  " * k + f"if ({name}) {{\n" for k, name in enumerate(names))
    code += "".join("  " * k + "}\n" for k in reversed(range(8))) + "```\n"
    assert not flagged(PREFIX + empty_bullets + code + AFTER)


def test_docling_otsl_header_cells_are_not_a_loop_and_a_looping_otsl_cell_is() -> None:
    # The shape of docling-core's DocTags for its own paper (2408.09869, Table 1): merged
    # header cells repeated once per spanned column.
    merged = "<ched>triple inter- annotator mAP @ 0.5-0.95 (%)" * 7
    header = "<otsl><loc_273><loc_147><ecel><ecel>" + "<ched>% of Total" * 3 + merged + "<nl>"
    rows = "".join(f"<rhed>Caption<fcel>{22524 + k}<fcel>2.04<fcel>1.77<nl>" for k in range(5))
    assert not flagged(PREFIX + header + rows + "</otsl>" + AFTER)
    need = DetectorConfig().row_cell_min_repeats
    looping = PREFIX + "<otsl><ched>Station" + "<fcel>Pt Values" * 300
    latency = caught_after(looping, looping.index("<fcel>"))
    assert latency is not None and latency <= (need + 1) * len("<fcel>Pt Values") + 64


def element_records(texts: list[str]) -> str:
    """Pretty-printed element JSON as converters write it: every record repeats its metadata
    (file name, languages, source URL), only the id and the text change."""
    records = [
        {
            "type": "NarrativeText",
            "element_id": f"{zlib.crc32(text.encode()):08x}",
            "text": text,
            "metadata": {
                "languages": ["eng"],
                "filename": "harbour-minutes.html",
                "filetype": "text/html",
                "data_source": {"url": "https://example.org/minutes", "version": "1.0"},
            },
        }
        for text in texts
    ]
    return json.dumps(records, indent=2)


def test_an_answer_that_opens_as_json_is_read_as_json_by_default() -> None:
    healthy = element_records(list(NOTES))
    assert not flagged(healthy)
    assert LoopDetector(NO_JSON).feed(healthy) is not None  # its lines read as a loop
    looping = dots_answer(drifting_lines(200))
    assert caught_after(looping, looping.index("Cargo of")) is not None


def test_markdown_that_opens_with_a_bracket_is_read_as_text() -> None:
    lines = "".join(
        f"[{k}] Cargo of tea for the Hakate quay, loaded by the crew\n" for k in range(3)
    )
    loop = "The gate is closed for the night and the pumps are running.\n" * 40
    text = lines + loop
    latency = caught_after(text, text.index("The gate"))
    assert latency is not None and latency <= 12 * 62


def test_a_text_layers_marks_and_leaders_one_per_line_are_not_a_loop() -> None:
    # pdftotext and PyMuPDF on a contents page and an exercise list (py-pdf benchmarks):
    # leader dots one per line, and a star per exercise.
    leaders = "1.1 Topologische Räume . .\n1.2 Metrische Räume . . . .\n\n" + ".\n" * 168
    stars = "".join(f"{k}\n" for k in range(2, 7)) + "*\n" * 37
    assert not flagged(PREFIX + leaders + "\n" + stars + AFTER)
