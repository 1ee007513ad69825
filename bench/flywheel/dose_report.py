"""The dose study's figures (`dose.py`): each split's arms as `flywheel-arms` reports them,
each recipe's dose curve over seeds, the recipes at the top dose against the issue's target,
and each run's diagnostics."""

from __future__ import annotations

import re
from typing import Any

from bench.flywheel import arms_report

SPLITS = ("held_out", "validation")
TARGET_CUT = 0.5  # at least 50% fewer first-attempt loops than the base, in every seed
CER_TOLERANCE = 0.02  # on the pages the base never looped on (the promotion gate's)
CER = "cer_base_never_looped_capped"  # each page's CER at most 1 (`dose_sweep`)


def flat(readings: dict[str, Any], split: str) -> dict[str, Any]:
    """Every arm read on `split`, keyed `LABEL.PLAN` (the base's greedy from its ladder)."""
    out: dict[str, Any] = {}
    for reading in readings.values():
        out |= reading.get(split, {})
    return out


def summarize(
    readings: dict[str, Any], training: dict[str, Any], diagnostics: dict[str, Any]
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for split in SPLITS:
        arms = flat(readings, split)
        if arms_report.BASE in arms:
            summary[split] = arms_report.summarize(arms, training)
    held = summary.get("held_out")
    if held:
        summary["dose_curve"] = dose_curve(held)
        summary["recipes"] = recipes(held)
    summary["diagnostics"] = diagnostics
    return summary


def _group(label: str) -> tuple[str, int] | None:
    found = re.fullmatch(r"([a-z]+)-([0-9]+)s[0-9]+\.greedy", label)
    return (found[1], int(found[2])) if found else None


def dose_curve(held: dict[str, Any]) -> list[dict[str, Any]]:
    """Each recipe read at more than one dose, by pairs: the rate of each seed, pooled with its
    interval, and the spread between seeds (the base, at 0 pairs, heads every recipe's curve)."""
    base = held["arms"][arms_report.BASE]["first_attempt"]
    doses: dict[str, list[dict[str, Any]]] = {}
    for pooled in held["over_seeds"].values():
        found = _group(pooled["seeds"][0])
        if found:
            seeds = pooled["rate_by_seed"]
            doses.setdefault(found[0], []).append(
                {
                    "recipe": found[0],
                    "pairs": found[1],
                    "rate_by_seed": seeds,
                    "rate": pooled["rate"],
                    "ci95": pooled["ci95"],
                    "spread": round(max(seeds) - min(seeds), 4),
                }
            )
    points = []
    for recipe, curve in sorted(doses.items()):
        if len(curve) > 1:
            start = {"recipe": recipe, "pairs": 0, "rate_by_seed": [base["rate"]]}
            start |= {"rate": base["rate"], "ci95": base["ci95"], "spread": 0.0}
            points += [start, *sorted(curve, key=lambda p: p["pairs"])]
    return points


def recipes(held: dict[str, Any]) -> dict[str, Any]:
    """Each recipe's pooled figures and whether it meets the target on the held-out pages."""
    rows = held["arms"]
    base = rows[arms_report.BASE]
    guard = rows.get("base.ngram", {}).get("first_attempt")
    out: dict[str, Any] = {}
    for group, pooled in held["over_seeds"].items():
        labels = [label for label in pooled["seeds"] if _group(label)]
        if not labels:
            continue
        cer_rise = [rows[label][CER] - base[CER] for label in labels]
        every_seed = all(
            rows[label]["first_attempt"]["rate"] <= (1 - TARGET_CUT) * base["first_attempt"]["rate"]
            for label in labels
        )
        out[group.removesuffix(".greedy")] = {
            **pooled,
            "cer_base_never_looped_rise": [round(x, 4) for x in cer_rise],
            "fixed_made": [rows[label]["vs_base"] for label in labels],
            "meets_target": bool(
                len(labels) >= 3
                and every_seed
                and pooled["ci95"][1] < base["first_attempt"]["ci95"][0]
                and max(cer_rise) <= CER_TOLERANCE
                and (guard is None or pooled["rate"] < guard["rate"])
            ),
        }
    return out


def markdown(summary: dict[str, Any]) -> str:
    held = summary.get("held_out")
    if not held:
        return "(no held-out readings yet)"
    lines = [
        arms_report.markdown(held),
        "",
        "| recipe | pairs | rate by seed | pooled (95%) | spread |",
        "|---|---|---|---|---|",
    ]
    for point in summary["dose_curve"]:
        seeds = " / ".join(f"{r:.3f}" for r in point["rate_by_seed"])
        low, high = point["ci95"]
        lines.append(
            f"| {point['recipe']} | {point['pairs']} | {seeds} "
            f"| {point['rate']:.3f} ({low:.3f}-{high:.3f}) | {point['spread']:.3f} |"
        )
    lines += [
        "",
        "| recipe | rate by seed | pooled (95%) | CER rise (never looped) | target |",
        "|---|---|---|---|---|",
    ]
    for name, row in summary["recipes"].items():
        seeds = " / ".join(f"{r:.3f}" for r in row["rate_by_seed"])
        rise = " / ".join(f"{r:+.3f}" for r in row["cer_base_never_looped_rise"])
        low, high = row["ci95"]
        lines.append(
            f"| {name} | {seeds} | {row['rate']:.3f} ({low:.3f}-{high:.3f}) | {rise} "
            f"| {'met' if row['meets_target'] else 'not met'} |"
        )
    return "\n".join(lines)
