"""The promotion gate's verdict as a table: a tuned model that loops more (or as much) than
its base on the held-out pages is never promoted; one that loops less is promoted only with
a split unlikely by chance and its accuracy and length within the stated tolerances."""

from __future__ import annotations

import pytest

from app.evaluate.stats import mcnemar_p, wilson
from app.train.gate import KEEP_BASE, PROMOTE, GatePolicy, PageReading, decide


def reads(
    loops: int,
    pages: int,
    *,
    cer: float = 0.1,
    loop_cer: float = 0.9,
    tokens: int = 100,
    first: int = 0,
) -> list[PageReading]:
    """`pages` readings, pages `first`..`first + loops - 1` looped (fill runs)."""
    looping = set(range(first, first + loops))
    return [
        PageReading(f"p{n}", n in looping, "char_run" if n in looping else None,
                    loop_cer if n in looping else cer, tokens)
        for n in range(pages)
    ]  # fmt: skip


# (name, base, tuned, policy, decision, words in the first reason)
CASES = [
    ("loops more", reads(5, 40), reads(9, 40), None, KEEP_BASE, "loops more: 9 of 40"),
    (
        "more loops on other pages",
        reads(8, 40),
        reads(9, 40, first=20),
        None,
        KEEP_BASE,
        "loops more",
    ),
    ("as many loops", reads(6, 40), reads(6, 40, first=6), None, KEEP_BASE, "loops no less"),
    ("no loops either", reads(0, 40), reads(0, 40), None, KEEP_BASE, "loops no less"),
    (
        "fewer loops, too few to tell",
        reads(4, 40),
        reads(1, 40),
        None,
        KEEP_BASE,
        "too few loops to tell",
    ),
    (
        "fewer loops, any drop allowed",
        reads(4, 40),
        reads(1, 40),
        GatePolicy(max_p=1.0),
        PROMOTE,
        "",
    ),
    ("loops less", reads(12, 60), reads(1, 60), None, PROMOTE, ""),
    (
        "loops less, healthy pages read worse",
        reads(12, 60),
        reads(1, 60, cer=0.2),
        None,
        KEEP_BASE,
        "less accurate on the pages the base read without looping",
    ),
    (
        "loops less, within the CER tolerance",
        reads(12, 60),
        reads(1, 60, cer=0.115),
        None,
        PROMOTE,
        "",
    ),
    (
        "loops less, a tolerance stated wider",
        reads(12, 60),
        reads(1, 60, cer=0.2),
        GatePolicy(max_cer_increase=0.15),
        PROMOTE,
        "",
    ),
    (
        "loops less by running on",
        reads(12, 60),
        reads(1, 60, tokens=200),
        None,
        KEEP_BASE,
        "longer answers",
    ),
    ("nothing held out", [], [], None, KEEP_BASE, "no held-out page"),
]


@pytest.mark.parametrize(
    ("base", "tuned", "policy", "decision", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_verdict(
    base: list[PageReading],
    tuned: list[PageReading],
    policy: GatePolicy | None,
    decision: str,
    reason: str,
) -> None:
    verdict = decide(base, tuned, policy)
    assert verdict.decision == decision
    assert verdict.promote == (decision == PROMOTE)
    if reason:
        assert reason in verdict.reasons[0]
    else:
        assert verdict.reasons == ()


def test_a_tuned_model_that_loops_more_is_never_promoted_whatever_the_policy() -> None:
    lenient = GatePolicy(max_p=1.0, max_cer_increase=1.0, max_token_increase=100.0)
    better_read = reads(3, 50, cer=0.0, loop_cer=0.0, tokens=10)
    verdict = decide(reads(2, 50, cer=0.5), better_read, lenient)
    assert not verdict.promote
    assert verdict.made == 1 and verdict.fixed == 0  # pages 0-1 loop in both, page 2 is new


def test_figures_count_the_paired_split_and_intervals() -> None:
    verdict = decide(reads(12, 60), reads(2, 60, first=11))
    assert (verdict.fixed, verdict.made) == (11, 1)
    assert verdict.mcnemar_p == mcnemar_p(11, 1) < 0.01
    assert verdict.base.loops == 12 and verdict.tuned.loops == 2
    assert verdict.tuned.ci95 == wilson(2, 60)
    assert verdict.base.loops_by_kind == {"char_run": 12}
    # CER on the pages the base read without looping: page 12 loops for the tuned model only
    assert verdict.tuned.cer_base_healthy == pytest.approx((47 * 0.1 + 0.9) / 48, abs=1e-4)


def test_the_models_must_read_the_same_pages() -> None:
    with pytest.raises(ValueError, match="same pages"):
        decide(reads(1, 5), reads(1, 6))


@pytest.mark.parametrize(
    ("hits", "total", "low", "high"), [(0, 10, 0.0, 0.2775), (17, 252, 0.0427, 0.1053)]
)
def test_wilson_interval(hits: int, total: int, low: float, high: float) -> None:
    assert wilson(hits, total) == pytest.approx((low, high), abs=1e-3)


@pytest.mark.parametrize(
    ("fixed", "made", "p"), [(0, 0, 1.0), (5, 0, 0.0625), (6, 0, 0.0312), (17, 1, 0.0001)]
)
def test_mcnemar_exact(fixed: int, made: int, p: float) -> None:
    assert mcnemar_p(fixed, made) == pytest.approx(p, abs=1e-4)


def test_on_the_arms_bench_readings_the_runs_that_looped_more_are_refused() -> None:
    """The committed flywheel-arms run (`bench/results/flywheel_arms.json`): per page, each
    tuned model's first greedy attempt against the base's on the same 252 held-out pages."""
    import json
    from pathlib import Path

    results = Path(__file__).parents[1] / "bench" / "results" / "flywheel_arms.json"
    arms = json.loads(results.read_text())["arms"]

    def readings(label: str) -> list[PageReading]:
        rows = sorted(arms[label]["pages"].items())
        return [
            PageReading(name, row["first"] is not None, row["first"], row["first_cer"],
                        row["first_tokens"])
            for name, row in rows
        ]  # fmt: skip

    base = readings("base.greedy")
    verdicts = {
        label.removesuffix(".greedy"): decide(base, readings(label))
        for label in arms
        if label.endswith(".greedy") and not label.startswith("base")
    }
    refused = {label for label, v in verdicts.items() if not v.promote}
    assert refused == {"dpo-36", "dpo-36s1", "dpo-20s1", "sft-36s1"}
    assert all(verdicts[label].reasons[0].startswith("loops more") for label in refused)
    assert all(v.tuned.loops < v.base.loops for v in verdicts.values() if v.promote)
