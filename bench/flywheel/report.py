"""The flywheel's figures: base vs DPO vs SFT-only, mean and spread over the training seeds,
against the issue's target (first-attempt degeneration down by 37% or more, CER at most 10%
worse, both relative to the base)."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean, pstdev
from typing import Any

TARGET_RATE_DROP = 0.37
TARGET_CER_RISE = 0.10
FIGURES = {"rate": "degeneration_rate_first_attempt", "cer": "cer", "failed": "failed_share"}


def spread(values: Sequence[float]) -> dict[str, Any]:
    return {
        "mean": round(fmean(values), 4),
        "sd": round(pstdev(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
        "per_seed": [round(v, 4) for v in values],
    }


def relative(value: float, base: float) -> float | None:
    return round(value / base - 1, 4) if base else None


def summarize(arms: dict[str, dict[str, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """Per arm: each figure's spread over the seeds, and the change of its mean from the base.

    `failed_share` is beside the loop rate because a page cut at the token cap without a loop
    the detector calls one fails without counting as degenerate."""
    arms = {label: {**arm, "failed_share": arm["pages_failed"] / max(1, arm["pages"])}
            for label, arm in arms.items()}  # fmt: skip
    base = {short: float(arms["base"][key] or 0.0) for short, key in FIGURES.items()}
    summary: dict[str, Any] = {"base": base, "pages": arms["base"]["pages"]}
    for arm in ("dpo", "sft"):
        if any(f"{arm}-s{seed}" not in arms for seed in seeds):
            continue  # trained, not served (the smoke run serves the DPO arm alone)
        figures = {
            short: spread([float(arms[f"{arm}-s{seed}"][key] or 0.0) for seed in seeds])
            for short, key in FIGURES.items()
        }
        rate_change = relative(figures["rate"]["mean"], base["rate"])
        cer_change = relative(figures["cer"]["mean"], base["cer"])
        summary[arm] = {
            **figures,
            "rate_change": rate_change,
            "cer_change": cer_change,
            "meets_target": rate_change is not None
            and cer_change is not None
            and rate_change <= -TARGET_RATE_DROP
            and cer_change <= TARGET_CER_RISE,
        }
    return summary


def _cell(figure: dict[str, Any]) -> str:
    return f"{figure['mean']:.3f} ± {figure['sd']:.3f} ({figure['min']:.3f}-{figure['max']:.3f})"


def _change(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def markdown(summary: dict[str, Any]) -> str:
    """The table printed at the end of a run (and kept in the report)."""
    base = summary["base"]
    rows = [
        "| arm | first-attempt degeneration | vs base | CER | vs base | pages failed | target |",
        "|---|---|---|---|---|---|---|",
        f"| base | {base['rate']:.3f} | | {base['cer']:.3f} | | {base['failed']:.3f} | |",
    ]
    for arm, name in (("dpo", "DPO"), ("sft", "SFT only")):
        if arm not in summary:
            continue
        row = summary[arm]
        rows.append(
            f"| {name} | {_cell(row['rate'])} | {_change(row['rate_change'])} | "
            f"{_cell(row['cer'])} | {_change(row['cer_change'])} | {_cell(row['failed'])} | "
            f"{'yes' if row['meets_target'] else 'no'} |"
        )
    rows.append(
        f"\n{summary['pages']} held-out pages; mean ± sd (min-max) over the seeds; target: "
        f"degeneration down {TARGET_RATE_DROP:.0%} or more, CER up {TARGET_CER_RISE:.0%} at most."
    )
    return "\n".join(rows)
