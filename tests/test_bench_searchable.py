"""The searchable-PDF bench's measures, on data made here: boxes paired in reading order, a
reader that errs on the asked share of words, an arm's summary. (Its timings are the bench's,
never a test's.)"""

from __future__ import annotations

from bench.searchable.arms import altered
from bench.searchable.measure import box_hits, iou
from bench.searchable.run import summarise


def test_boxes_are_paired_in_order_misread_words_one_to_one() -> None:
    truth = [("the", (0, 0, 10, 10)), ("red", (15, 0, 25, 10)), ("the", (30, 0, 40, 10))]
    placed = [("the", (0, 0, 10, 10)), ("rcd", (16, 0, 26, 10)), ("the", (60, 0, 70, 10))]
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == 1 / 3
    assert box_hits(placed, truth) == 2  # the misread "rcd" still sits on "red"; the last is off


def test_the_erring_reader_alters_the_asked_share_and_keeps_the_word_count() -> None:
    text = "\n".join(" ".join(f"word{n}{m}" for m in range(10)) for n in range(10))
    wrong = altered(text, 0.05, seed=1)
    changed = [a for a, b in zip(text.split(), wrong.split(), strict=True) if a != b]
    assert len(wrong.split()) == 100 and len(changed) == 5
    assert altered(text, 0.05, seed=1) == wrong  # seeded


def test_an_arms_summary_pools_boxes_and_counts_identical_pages() -> None:
    rows = [
        {
            "page": "a",
            "seconds": 2.0,
            "word_f1": 1.0,
            "cer": 0.0,
            "bytes": 110,
            "original_bytes": 100,
            "text_bytes": 10,
            "same_pixels": True,
            "true_words": 10,
            "box_hits": 9,
            "f1_vs_kept": 1.0,
        },
        {
            "page": "b",
            "seconds": 4.0,
            "word_f1": 0.8,
            "cer": 0.2,
            "bytes": 105,
            "original_bytes": 100,
            "text_bytes": 10,
            "same_pixels": False,
            "true_words": 30,
            "box_hits": 30,
            "f1_vs_kept": 0.99,
        },
        {"page": "c", "seconds": 3.0},  # nothing written
    ]
    summary = summarise(rows)
    assert (summary["pages"], summary["pages_written"], summary["pages_pixel_identical"]) == (
        3,
        2,
        1,
    )
    assert summary["box_iou_0.5_share"] == 0.975 and summary["f1_vs_kept_min"] == 0.99
    assert summary["word_f1"] == 0.9 and summary["seconds_per_page"] == 3.0
    assert summary["size_ratio"] == 1.075 and summary["size_over_original_plus_text"] == 0.9773
