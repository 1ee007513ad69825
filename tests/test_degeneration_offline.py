"""Offline scoring: CREP, n-gram rates, the DharmaOCR rule and the combined score_output."""

import random

import pytest

from app.degeneration import (
    crep_coverage,
    is_degenerate_dharma,
    score_output,
    unique_ngram_rates,
)
from app.degeneration.tokens import is_no_space_script, token_texts

PROSE = (
    "The committee reviewed the annual budget in detail. Several members asked about the "
    "cost of repairs to the north bridge, and the treasurer explained how the estimate had "
    "been prepared. After a short debate the plan was approved with two abstentions. The "
    "next meeting will discuss the library opening hours and the new parking rules.\n\n"
)
OTHER_PROSE = (
    "Rainfall in the valley was below average for the third year running. Farmers moved "
    "their herds to higher pastures earlier than usual, and the river authority limited "
    "irrigation to three days a week until the reservoirs recover.\n\n"
)
SENTENCE = "I am interested in the foundations of mathematics because I think it is beautiful.\n"


# --- tokens and CREP --------------------------------------------------------------------


def test_tokens_are_words_marks_and_single_cjk_characters_without_layout_fill() -> None:
    text = "Hello, World! 这是测试 ..... ___ | x | foo_bar"
    assert token_texts(text) == ["hello", "world", "!", "这", "是", "测", "试", "x", "foo_bar"]
    assert is_no_space_script("这是一个没有空格的句子")
    assert not is_no_space_script(PROSE)


def test_crep_covers_a_loop_from_its_first_copy() -> None:
    result = crep_coverage("Intro words here. " + "the cat sat on the mat again " * 10)
    assert result.coverage == pytest.approx(1.0)
    assert result.degenerate
    assert result.segment == "the cat sat on the mat again"
    assert result.onset == len("Intro words here. ")


def test_crep_of_healthy_prose_is_low() -> None:
    assert not crep_coverage(PROSE).degenerate
    assert crep_coverage("no word in this sentence comes back twice at all").coverage == 0.0


def test_crep_uses_characters_for_text_without_spaces() -> None:
    result = crep_coverage("总序。" + "这是一个测试句子，" * 12)
    assert result.degenerate
    assert result.segment_tokens == len("这是一个测试句子，") - 1  # the comma is layout


def test_unique_ngram_rates() -> None:
    assert unique_ngram_rates("a b c d e f g h i j") == {3: 1.0, 4: 1.0, 5: 1.0, 6: 1.0}
    rates = unique_ngram_rates("go " * 100)
    assert set(rates) == {3, 4, 5, 6}
    assert all(rate < 0.05 for rate in rates.values())


# --- DharmaOCR rule ------------------------------------------------------------------------


def test_dharma_needs_the_cap_and_a_repeating_tail() -> None:
    looping = PROSE + "and so on " * 100
    capped = is_degenerate_dharma(looping, finish_reason="length")
    assert (capped.degenerate, capped.hit_cap, capped.basis) == (True, True, "cap_and_tail")
    assert not is_degenerate_dharma(looping, finish_reason="stop").degenerate
    assert not is_degenerate_dharma(PROSE + OTHER_PROSE, finish_reason="length").degenerate
    by_tokens = is_degenerate_dharma(looping, completion_tokens=4096, max_tokens=4096)
    assert by_tokens.degenerate and by_tokens.hit_cap


def test_dharma_with_unknown_cap_relies_on_the_tail_and_says_so() -> None:
    verdict = is_degenerate_dharma(PROSE + "and so on " * 100)
    assert (verdict.degenerate, verdict.hit_cap, verdict.basis) == (True, None, "tail_only")


# --- score_output ---------------------------------------------------------------------------


def test_healthy_output_scores_healthy_with_diagnostics() -> None:
    score = score_output(PROSE + OTHER_PROSE + "The end.", finish_reason="stop")
    assert not score.degenerate
    assert (score.reason, score.kind, score.onset, score.loop_tail) == (None, None, None, "")
    assert score.hit_cap is False and not score.dharma_degenerate
    assert set(score.unique_ngram_rates) == {3, 4, 5, 6}
    assert score.text_length == len(PROSE + OTHER_PROSE + "The end.")


def test_online_loop_is_reported_with_its_excerpt() -> None:
    text = PROSE + "Happy birthday to you!\n" * 40
    score = score_output(text, finish_reason="length")
    assert score.degenerate and score.reason == "online_loop"
    assert score.kind == "line" and score.period == len("Happy birthday to you!\n")
    assert score.onset is not None and text[score.onset :].startswith(score.loop_tail)
    assert score.crep_degenerate and score.dharma_degenerate


def test_sentence_re_emitted_once_from_mid_line_is_degenerate() -> None:
    repeated = "Several members asked about the cost of repairs to the north bridge today."
    text = PROSE + "In closing, " + repeated + "\n\n**" + repeated + "**"
    score = score_output(text)
    assert score.degenerate and score.reason == "tail_loop"
    assert score.repeats == pytest.approx(2.0, abs=0.1)


def test_whole_paragraph_repeated_at_the_end_is_healthy() -> None:
    # Documents repeat whole paragraphs (filler text, boilerplate); only copies that start
    # mid-line count as re-emission.
    assert not score_output(PROSE + SENTENCE + "\n" + SENTENCE).degenerate


def test_paragraph_loop_cut_after_two_and_a_half_copies_is_degenerate() -> None:
    text = PROSE + "Let me explain. " + SENTENCE * 2 + SENTENCE[:40]
    score = score_output(text, finish_reason="length")
    assert score.degenerate and score.reason == "tail_loop"


def test_cycle_with_counting_timestamps_at_the_end_is_degenerate() -> None:
    lines = ["Okay.", "So I'm going to go over to the", "next slide."]
    blocks = [
        f"{155 + i}\n00:05:{2 + i:02d},580 --> 00:05:{3 + i:02d},180\n{lines[i % 3]}\n"
        for i in range(9)
    ]
    score = score_output("\n".join(blocks))
    assert score.degenerate and score.reason == "tail_loop"


def test_word_stutter_is_degenerate() -> None:
    stuttered = "I see what you did there and the answer is still five no matter how"
    words = stuttered.split()
    text = "Me: what is 2+3\nAI: The answer is 5!\n\nAI: " + " ".join(
        " ".join([word] * 4) for word in words
    )
    # The online detector calls a completed stuttering line itself (`stutter_in_line`).
    score = score_output(text)
    assert score.degenerate and score.reason in ("stutter", "online_loop")
    assert score.period is not None and score.period < 10  # one stuttered word, not a block


def test_emphatic_words_alone_are_not_stutter() -> None:
    text = PROSE + "It was very very very cold, and we said no no no to the offer.\n" + PROSE
    assert not score_output(text).degenerate


@pytest.mark.parametrize("seed", range(5))
def test_filler_paragraphs_repeated_in_a_document_are_healthy(seed: int) -> None:
    rng = random.Random(seed)
    lorem = (
        "Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam nonumy eirmod "
        "tempor invidunt ut labore et dolore magna aliquyam erat, sed diam voluptua. "
    )
    sections = [f"## Section {n}\n\n" + (lorem * 3).strip() + "\n\n" for n in range(4)]
    rng.shuffle(sections)
    score = score_output("".join(sections) + PROSE)
    assert not score.degenerate
    assert score.crep_degenerate  # CREP alone would flag it: the tail rule keeps it healthy


MERGED_HEADERS = ("Revenue", "Cost", "Margin", "Growth", "Share")


def _sparse_matrix(rng: random.Random) -> str:
    rows = (" ".join(rng.choice("0000000012") for _ in range(12)) for _ in range(12))
    return "Confusion matrix:\n" + "\n".join(rows)


@pytest.mark.parametrize(
    "text",
    [
        "Gallery\n\n" + "<!-- image -->\n\n" * 20 + "End of gallery.",
        "Indented:" + "&nbsp;" * 12 + "text continues here.",
        "| " + " | ".join(w for w in MERGED_HEADERS for _ in range(3)) + " |\n|" + "---|" * 15,
        "uint8_t key[] = {" + "0x00, " * 40 + "};",
        _sparse_matrix(random.Random(1)),
    ],
    ids=["image-placeholders", "nbsp-entities", "merged-headers", "hex-array", "sparse-matrix"],
)
def test_markup_merged_headers_and_numbers_are_healthy(text: str) -> None:
    assert not score_output(text).degenerate
