"""`python -m bench flywheel-arms`: page families, the interval and the summary (its smoke run
on real vLLM CPU servers is in `test_flywheel_smoke.py`)."""

from __future__ import annotations

import random
from pathlib import Path

from bench.flywheel import arms_report, data, families


def test_every_family_draws_pages_the_glyph_atlas_can_draw() -> None:
    rng = random.Random(0)
    sources = [[f"word{n} and some prose to wrap on line {n}." for n in range(40)]] * 3
    chosen = families.choose(sources, 3 * len(families.FAMILIES), "held_out", rng)
    assert [families.family_of(p.name) for p in chosen[: len(families.FAMILIES)]] == list(
        families.FAMILIES
    )
    for page in chosen:
        assert families.MIN_LINES - 1 <= len(page.lines) <= families.MAX_LINES + families.LONG_EXTRA
        for line in page.lines:
            assert len(line) <= families.WIDE_COLUMNS and set(line) <= set(data.CHARS), (
                page.name,
                line,
            )
    contents = next(p for p in chosen if "contents" in p.name)
    assert all(line.rstrip("0123456789").endswith(". ") for line in contents.lines)


def test_the_wilson_interval_matches_its_textbook_values() -> None:
    assert arms_report.wilson(5, 10) == [0.2366, 0.7634]
    assert arms_report.wilson(0, 10) == [0.0, 0.2775]
    assert arms_report.wilson(10, 10) == [0.7225, 1.0]


def arm(kinds: list[str | None], cers: list[float]) -> dict[str, object]:
    pages = {f"held_out-{'table' if i % 2 else 'prose'}-{i:04d}": {
        "family": "table" if i % 2 else "prose", "first": kind, "cer": cer, "tokens": 10}
        for i, (kind, cer) in enumerate(zip(kinds, cers, strict=True))}  # fmt: skip
    return {"pages": pages, "degeneration_rate_final": 0.0}


def test_the_paired_comparison_is_mcnemar_s_exact_test() -> None:
    looped = {"first": "phrase"}
    healthy: dict[str, object] = {"first": None}
    base = {f"p{n}": looped for n in range(10)} | {"q": healthy}
    arm = {f"p{n}": healthy for n in range(10)} | {"q": looped}
    # 10 fixed, 1 made: 2 x (1 + 11) / 2**11
    assert arms_report.paired(base, arm) == {"fixed": 10, "made": 1, "mcnemar_p": 0.0117}


def test_the_summary_counts_loops_by_kind_and_scores_the_base_healthy_pages_apart() -> None:
    arms = {
        "base.greedy": arm(["phrase", None, "char_run", None], [0.9, 0.1, 0.8, 0.2]),
        "dpo-5.greedy": arm([None, "line", None, None], [0.3, 0.5, 0.2, 0.2]),
    }
    training = {"dpo-5": {"pairs": 5, "steps": 8, "train_seconds": 40.0}}
    summary = arms_report.summarize(arms, training)
    base, tuned = summary["arms"]["base.greedy"], summary["arms"]["dpo-5.greedy"]
    assert base["first_attempt"]["loops"] == 2 and base["by_kind"]["phrase"]["loops"] == 1
    assert tuned["by_kind"]["line"]["loops"] == 1 and tuned["first_attempt"]["rate"] == 0.25
    assert tuned["cer_base_never_looped"] == 0.35  # pages 1 and 3: 0.5 and 0.2
    assert tuned["training"] == training["dpo-5"] and base["training"] == {}
    assert tuned["vs_base"] == {"fixed": 2, "made": 1, "mcnemar_p": 1.0}
    assert base["vs_base"] == {"fixed": 0, "made": 0, "mcnemar_p": 1.0}
    assert base["gate"] is None and tuned["gate"]["decision"] == "keep base"
    assert tuned["gate"]["reasons"][0].startswith("too few loops to tell: fixed 2, made 1")
    assert summary["base_by_family"]["prose"]["kinds"] == {"phrase": 1, "char_run": 1}
    assert tuned["loops_by_family"] == {"table": 1}
    curve = [(p["pairs"], p["loops"], p["change"]) for p in summary["pairs_curve"]]
    assert curve == [(0, 2, 0.0), (5, 1, -0.5)]
    assert "dpo-5.greedy" in arms_report.markdown(summary)


def test_tuned_arms_pool_over_training_seeds_with_the_seed_spread_in_the_interval() -> None:
    """One seed's model loops on every page, another's on none: pooled over seeds the rate
    is a third, and the interval spans all of 0-1 (the training run decides), where
    each seed alone would have a tight one; an arm of one seed is not pooled."""
    arms = {
        "base.greedy": arm([None] * 40, [0.1] * 40),
        "dpo-9.greedy": arm(["char_run"] * 40, [0.9] * 40),
        "dpo-9s1.greedy": arm([None] * 40, [0.1] * 40),
        "dpo-9s2.greedy": arm([None] * 40, [0.1] * 40),
        "sft-9.greedy": arm([None] * 40, [0.1] * 40),
    }
    pooled = arms_report.summarize(arms, {})["over_seeds"]
    assert list(pooled) == ["dpo-9.greedy"]
    dpo = pooled["dpo-9.greedy"]
    assert dpo["rate_by_seed"] == [1.0, 0.0, 0.0] and dpo["rate"] == 0.3333
    assert dpo["ci95"][0] == 0.0 and dpo["ci95"][1] == 1.0
    assert dpo["by_kind"]["char_run"] == 40 and dpo["page_readings"] == 120


def test_every_probe_candidate_draws_a_page_the_server_can_read() -> None:
    from bench.flywheel import probe

    rng = random.Random(1)
    source = [f"word{n} and some prose to wrap on line {n} of the page." for n in range(60)]
    for name, layout in probe.LAYOUTS.items():
        lines = layout(source, rng, data.MAX_LINES)
        assert lines and all(set(line) <= set(data.CHARS) for line in lines), name
        width = max(len(line) for line in lines)
        assert (width + 1) // 2 * len(lines) < probe.WINDOW // 2, f"{name}: too many image tokens"
    glyphs = probe.atlas(*probe.LOOKS["serif"][:3])
    assert glyphs.shape == (len(data.CHARS), *data.CELL) and glyphs.max() > 0


def test_the_guard_arm_is_taken_from_greedy_only_where_the_guard_could_not_act() -> None:
    """Replays greedy answers token by token (the base's tokens are bytes) through the
    plugin's own NgramGuard: wherever `guard_could_act` says no, the guard never bans the
    token greedy chose, so the guard's answer is the greedy one; texts with a 30-byte run
    twice are caught, the repeat found by the guard itself."""
    from app.vllm_plugin.guard import NgramGuard
    from bench.flywheel.reads import NGRAM, guard_could_act

    rng = random.Random(7)
    words = ["the", "module", "returns", "a", "list", "of", "values", "é", "|", "<td>"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 120))) for _ in range(300)]
    texts += ["abc" * 40, "x" * 31, "Transfer Protocol " * 4, "line one\nline two\n" * 3]
    could_act = 0
    for text in texts:
        guard = NgramGuard(NGRAM[0], NGRAM[1], [])  # no whitelist: the strictest guard
        raw = text.encode()
        banned_choice = False
        for index, token in enumerate(raw):
            if index:
                banned_choice |= token in guard.banned_next()
            guard.step([token], "")
        if not guard_could_act(text):
            assert not banned_choice, text
        could_act += guard_could_act(text)
        if banned_choice:
            assert guard_could_act(text), text
    assert could_act > 4  # the repeats above, and random texts long enough to repeat a run
    assert guard_could_act("\ufffd lost bytes")


def test_tuned_arms_on_a_subset_are_compared_with_the_base_on_those_pages_only() -> None:
    """The base reads 8 pages, a tuned arm the first 4: its gate, its pairs-curve point and
    the `base@4` rows see the base's loops on those 4 pages, not on the other 4."""
    from bench.flywheel.reads import restricted

    base = arm([None, None, None, None, "char_run", "char_run", "char_run", "char_run"],
               [0.1] * 8)  # fmt: skip
    base["pages"] = {n: {**row, "looped_any": row["first"] is not None,
                         "final_loop": row["first"] is not None}
                     for n, row in base["pages"].items()}  # fmt: skip
    first_four = sorted(n for n in base["pages"] if int(n[-4:]) < 4)
    tuned = {"pages": {n: {**base["pages"][n], "first": "phrase"} for n in first_four},
             "degeneration_rate_final": 1.0}  # fmt: skip
    arms = {"base.greedy": base, **restricted({"base.greedy": base}, first_four, 4),
            "dpo-5.greedy": tuned}  # fmt: skip
    assert set(arms["base@4.greedy"]["pages"]) == set(first_four)
    assert arms["base@4.greedy"]["degeneration_rate_final"] == 0.0
    # a ladder's final rate counts the pages whose last attempt looped, not any attempt
    cured = {n: {**row, "final_loop": False} for n, row in base["pages"].items()}
    ladder = restricted({"base.ladder": {**base, "pages": cured}}, sorted(cured), 8)
    assert ladder["base@8.ladder"]["degeneration_rate_final"] == 0.0
    summary = arms_report.summarize(arms, {"dpo-5": {"pairs": 5}})
    rows = summary["arms"]
    assert rows["dpo-5.greedy"]["vs_base"]["fixed"] == 0
    assert rows["dpo-5.greedy"]["vs_base"]["made"] == 4
    assert rows["base@4.greedy"]["gate"] is None
    assert rows["dpo-5.greedy"]["gate"]["decision"] == "keep base"
    assert [p["loops"] for p in summary["pairs_curve"]] == [0, 4]  # the base on the 4 pages


def test_a_stopped_run_resumes_with_its_own_size_and_refuses_another(tmp_path: Path) -> None:
    """pages.json keeps the size as JSON (tuples become lists): the same options resume it."""
    import json
    from dataclasses import asdict, replace

    import pytest

    from bench.flywheel import arms

    size = replace(arms.FULL, eval_pages=6000, tuned_pages=1200, seeds=(1, 2),
                   base_subset_arms=("reppen",))  # fmt: skip
    (tmp_path / "pages.json").write_text(json.dumps({"size": asdict(size), "hashes": {"a": 1}}))
    assert arms._pages(tmp_path, size, resume=True) == {"a": 1}
    with pytest.raises(SystemExit, match="another size"):
        arms._pages(tmp_path, replace(size, tuned_pages=800), resume=True)
