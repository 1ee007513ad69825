"""The real-data parts of `python -m bench detector` (issue 39) on small inputs: how a real
loop is continued, how thresholds are derived and held out, how false alarms are counted."""

import app.degeneration
from bench.detector.continued import continue_loop, evaluate_continued, find_unit
from bench.detector.corpus import derive, false_alarms, held_out_thresholds, implied_precision
from bench.detector.heldout import Sample

PROSE = "The board met in March and reviewed the dredging plan and the pier repairs. "


def sample(text: str) -> Sample:
    return Sample("s", "thread#1", "degenerate", False, "line repeat", text)


def test_an_exact_loop_is_continued_by_its_unit_from_its_onset() -> None:
    unit = "Cargo of tea for the north quay.\n"
    loop = continue_loop(sample(PROSE + unit * 3), cap=2_000)
    assert (loop.onset, loop.period, loop.how) == (len(PROSE), len(unit), "periodic tail")
    assert len(loop.text) == loop.onset + 2_000
    assert loop.text[loop.onset :].startswith(unit * 10)


def test_a_counting_loop_goes_on_counting() -> None:
    text = PROSE + "".join(f"Step {k}: open the gate.\n" for k in range(1, 5))
    period, onset, how = find_unit(text)
    assert how == "drifting numbers" and onset == len(PROSE)
    assert period == len("Step 1: open the gate.\n")
    loop = continue_loop(sample(text), cap=600)
    assert "Step 6: open the gate." in loop.text and "Step 9: open the gate." in loop.text


def test_continued_loops_are_caught_and_timed_from_their_onset() -> None:
    loops = [continue_loop(sample(PROSE + "Cargo of tea for the north quay.\n" * 3), cap=3_000)]
    result = evaluate_continued(app.degeneration, loops)
    assert result["recall"] == 1.0
    assert 0 <= result["loops"][0]["latency_chars"] <= 3 * 33 + 64


def test_thresholds_are_derived_beyond_the_healthy_maximum_of_the_other_sources() -> None:
    assert [derive(n) for n in (0, 6, 15, 19)] == [2, 16, 32, 32]
    extents = {"row_cell_min_repeats": {"a": {"max": 19}, "b": {"max": 6}, "c": {"max": 1}}}
    held = held_out_thresholds(extents)
    assert held["a"]["row_cell_min_repeats"] == 16  # from b and c only
    assert held["b"]["row_cell_min_repeats"] == 32


def test_false_alarms_are_counted_per_source_and_per_thousand_pages() -> None:
    page = {"source": "a", "origin": "o", "format": "markdown", "id": "1"}
    pages = [
        {**page, "text": PROSE * 3},
        {**page, "id": "2", "source": "b", "text": PROSE + "Cargo of tea.\n" * 60},
    ]
    result = false_alarms(app.degeneration, pages)
    assert result["flagged"] == 1 and result["per_1000"] == 500.0
    assert result["per_source"] == {
        "a": {"pages": 1, "flagged": 0},
        "b": {"pages": 1, "flagged": 1},
    }


def test_implied_precision_at_the_dharma_loop_rate() -> None:
    assert implied_precision(1.0, 0.0) == 1.0
    assert implied_precision(1.0, 0.0242 / 0.9758) == 0.5
