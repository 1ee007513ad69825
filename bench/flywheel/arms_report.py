"""The arms bench's figures: per arm, the first-attempt loop rate by loop kind with a 95%
Wilson interval over pages, CER on all pages and on the pages where the base never looped,
tokens per page; per family, the base's loop rate (which layouts make it loop, and how)."""

from __future__ import annotations

import math
import re
from collections import Counter
from statistics import fmean
from typing import Any

BASE = "base.greedy"
KINDS = ("char_run", "phrase", "line", "block")
Z95 = 1.959964


def wilson(hits: int, total: int) -> list[float]:
    """The 95% Wilson score interval of `hits` in `total` (pages)."""
    if total == 0:
        return [0.0, 1.0]
    share = hits / total
    middle = (share + Z95**2 / (2 * total)) / (1 + Z95**2 / total)
    half = Z95 * math.sqrt(share * (1 - share) / total + Z95**2 / (4 * total**2))
    return [round(max(0.0, middle - half / (1 + Z95**2 / total)), 4),
            round(min(1.0, middle + half / (1 + Z95**2 / total)), 4)]  # fmt: skip


def rate(hits: int, total: int) -> dict[str, Any]:
    return {"loops": hits, "pages": total, "rate": round(hits / max(1, total), 4),
            "ci95": wilson(hits, total)}  # fmt: skip


def paired(base: dict[str, Any], arm: dict[str, Any]) -> dict[str, Any]:
    """The arm against the base on the same pages: loops it fixed, loops it made, and the
    exact two-sided McNemar p-value of that split (the pages both looped on, or neither, say
    nothing about which arm loops less)."""
    shared = base.keys() & arm.keys()
    fixed = sum(bool(base[n]["first"]) and not arm[n]["first"] for n in shared)
    made = sum(not base[n]["first"] and bool(arm[n]["first"]) for n in shared)
    changed = fixed + made
    tail = sum(math.comb(changed, k) for k in range(min(fixed, made) + 1)) / 2**changed
    return {"fixed": fixed, "made": made, "mcnemar_p": round(min(1.0, 2 * tail), 4)}


def gate(base: dict[str, Any], arm: dict[str, Any]) -> dict[str, Any]:
    """What `folio train-dpo`'s promotion gate (`app.train.gate`) decides on these readings:
    each model's first greedy attempt on the same pages, CER against the truth."""
    from app.train.gate import PageReading, decide

    def readings(pages: dict[str, Any]) -> list[PageReading]:
        return [
            PageReading(name, row["first"] is not None, row["first"],
                        row.get("first_cer", row["cer"]), row.get("first_tokens", row["tokens"]))
            for name, row in sorted(pages.items())
        ]  # fmt: skip

    shared = base.keys() & arm.keys()  # a tuned arm may read a subset of the base's pages
    verdict = decide(readings({n: base[n] for n in shared}), readings({n: arm[n] for n in shared}))
    return {"decision": verdict.decision, "reasons": list(verdict.reasons)}


def _tuned_greedy(label: str, base: dict[str, Any]) -> bool:
    return bool(base) and label.endswith(".greedy") and not label.startswith("base")


def _capped(value: float | None) -> float | None:
    return None if value is None else min(1.0, value)


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(fmean(kept), 4) if kept else None


def summarize(arms: dict[str, Any], training: dict[str, Any]) -> dict[str, Any]:
    base_pages = arms[BASE]["pages"] if BASE in arms else {}
    healthy = {name for name, row in base_pages.items() if row["first"] is None}
    summary: dict[str, Any] = {
        "pages": len(base_pages),
        "base_never_looped": len(healthy),
        "truths_the_detector_calls_loops": sum(
            bool(row.get("truth_trips_detector")) for row in base_pages.values()
        ),
    }
    rows = {}
    for label, arm in arms.items():
        pages = arm["pages"]
        kinds = Counter(row["first"] for row in pages.values() if row["first"])
        tuned = training.get(label.split(".")[0], {})
        rows[label] = {
            "first_attempt": rate(sum(kinds.values()), len(pages)),
            "by_kind": {kind: rate(kinds.get(kind, 0), len(pages)) for kind in KINDS},
            "final_loop_rate": arm["degeneration_rate_final"],
            "cer": _mean([row["cer"] for row in pages.values()]),
            "cer_base_never_looped": _mean(
                [row["cer"] for name, row in pages.items() if name in healthy]
            ),
            # each page's CER at most 1, as the dose study's sweep reads it: a clean answer
            # whose rules of underscores run past the truth scores up to 1.7 a page uncapped
            "cer_base_never_looped_capped": _mean(
                [_capped(row["cer"]) for name, row in pages.items() if name in healthy]
            ),
            "tokens_per_page": round(fmean(r["tokens"] for r in pages.values()), 1)
            if pages else None,
            "training": {k: tuned[k] for k in ("pairs", "steps", "train_seconds") if k in tuned},
            "vs_base": paired(base_pages, pages) if base_pages else None,
            "gate": gate(base_pages, pages) if _tuned_greedy(label, base_pages) else None,
            "loops_by_family": dict(
                sorted(Counter(row["family"] for row in pages.values() if row["first"]).items())
            ),
        }  # fmt: skip
    summary["arms"] = rows
    summary["over_seeds"] = over_seeds(arms)
    summary["base_by_family"] = by_family(base_pages)
    summary["pairs_curve"] = pairs_curve(rows)
    return summary


def unseeded(head: str) -> str:
    """A tuned model's label without its further training seed (`dpo-36s1` -> `dpo-36`)."""
    return re.sub(r"s[0-9]+$", "", head)


def over_seeds(arms: dict[str, Any], draws: int = 4000) -> dict[str, Any]:
    """Tuned arms trained with several seeds on the same pairs (`dpo-36.greedy`,
    `dpo-36s1.greedy`, ...): the first-attempt loop rate pooled over seeds and pages, with a 95%
    percentile interval from a two-level bootstrap (the seeds drawn with replacement, then each
    drawn seed's pages), so that the spread between training runs widens it as the page sample
    does; with three seeds the seed level is coarse, which the per-seed rates beside it show."""
    import numpy as np

    groups: dict[str, list[str]] = {}
    for label in arms:
        head, _, plan = label.partition(".")
        if not head.startswith("base"):
            groups.setdefault(f"{unseeded(head)}.{plan}", []).append(label)
    rng = np.random.default_rng(0)
    out = {}
    for group, labels in sorted(groups.items()):
        if len(labels) < 2:
            continue
        looped = [np.array([row["first"] is not None for row in arms[label]["pages"].values()])
                  for label in labels]  # fmt: skip
        means = np.empty(draws)
        for draw in range(draws):
            chosen = rng.integers(len(looped), size=len(looped))
            means[draw] = np.mean([rng.choice(looped[i], looped[i].size).mean() for i in chosen])
        pages = [row for label in labels for row in arms[label]["pages"].values()]
        kinds = Counter(row["first"] for row in pages if row["first"])
        out[group] = {
            "seeds": labels,
            "rate_by_seed": [round(float(x.mean()), 4) for x in looped],
            "rate": round(float(np.mean([x.mean() for x in looped])), 4),
            "ci95": [round(float(q), 4) for q in np.percentile(means, [2.5, 97.5])],
            "by_kind": {kind: kinds.get(kind, 0) for kind in KINDS},
            "page_readings": len(pages),
            "cer": _mean([row["cer"] for row in pages]),
            "tokens_per_page": round(fmean(row["tokens"] for row in pages), 1),
        }
    return out


def pairs_curve(rows: dict[str, Any]) -> list[dict[str, Any]]:
    """First-attempt loops against the DPO arms' training pairs (0: the base), and the change
    from the base (on the tuned arms' pages, `base@N.greedy`, where they read fewer)."""
    if BASE not in rows:
        return []
    subset = [label for label in rows if label.startswith("base@") and label.endswith(".greedy")]
    base = rows[subset[0] if subset else BASE]["first_attempt"]
    points = [{"pairs": 0, **base, "change": 0.0}]
    for label, row in rows.items():
        head = label.partition(".")[0]
        seeded = unseeded(head) != head  # further seeds: `over_seeds`
        if label.startswith("dpo-") and label.endswith(".greedy") and not seeded:
            first = row["first_attempt"]
            change = first["rate"] / base["rate"] - 1 if base["rate"] else None
            points.append({"pairs": row["training"].get("pairs"), **first,
                           "change": None if change is None else round(change, 4)})  # fmt: skip
    return sorted(points, key=lambda point: point["pairs"] or 0)


def by_family(pages: dict[str, Any]) -> dict[str, Any]:
    families: dict[str, Any] = {}
    for row in pages.values():
        family = families.setdefault(row["family"], {"pages": 0, "kinds": Counter(), "cer": []})
        family["pages"] += 1
        if row["first"]:
            family["kinds"][row["first"]] += 1
        family["cer"].append(row["cer"])
    return {
        name: {
            **rate(sum(f["kinds"].values()), f["pages"]),
            "kinds": dict(f["kinds"]),
            "cer": _mean(f["cer"]),
        }
        for name, f in sorted(families.items())
    }


def _cell(figure: dict[str, Any]) -> str:
    low, high = figure["ci95"]
    return f"{figure['rate']:.3f} ({figure['loops']}; {low:.3f}-{high:.3f})"


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _versus(paired: dict[str, Any] | None) -> str:
    return "" if not paired else f"{paired['fixed']} / {paired['made']} ({paired['mcnemar_p']:.2g})"


def markdown(summary: dict[str, Any]) -> str:
    """The arms table, then the base's loop rate by family."""
    kinds = [k for k in KINDS if any(r["by_kind"][k]["loops"] for r in summary["arms"].values())]
    head = ["arm", "1st-attempt loops (n; 95% CI)", *kinds, "final loops", "CER",
            "CER, base-healthy pages", "tokens/page", "vs base: fixed / made (p)",
            "training", "gate"]  # fmt: skip
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, row in summary["arms"].items():
        cost = row["training"]
        trained = (f"{cost['pairs']} pairs, {cost['steps']} steps, {cost['train_seconds']:.0f} s"
                   if cost else "")  # fmt: skip
        cells = [label, _cell(row["first_attempt"]), *(_cell(row["by_kind"][k]) for k in kinds),
                 _number(row["final_loop_rate"]), _number(row["cer"]),
                 _number(row["cer_base_never_looped"]), _number(row["tokens_per_page"], 0),
                 _versus(row.get("vs_base")), trained,
                 (row.get("gate") or {}).get("decision", "")]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    rows += [
        "",
        "| family | pages | base loops (95% CI) | kinds | base CER |",
        "|---|---|---|---|---|",
    ]
    for name, family in summary["base_by_family"].items():
        kinds_seen = ", ".join(f"{k} {n}" for k, n in sorted(family["kinds"].items())) or "-"
        rows.append(f"| {name} | {family['pages']} | {_cell(family)} | {kinds_seen} | "
                    f"{_number(family['cer'])} |")  # fmt: skip
    if summary.get("pairs_curve"):
        rows += ["", "| DPO pairs | 1st-attempt loops (n; 95% CI) | vs base |", "|---|---|---|"]
        for point in summary["pairs_curve"]:
            change = "" if point["change"] is None else f"{point['change']:+.0%}"
            rows.append(f"| {point['pairs']} | {_cell(point)} | {change} |")
    if summary.get("over_seeds"):
        rows += ["", "| arm, over training seeds | seeds | 1st-attempt loop rate (95% CI, "
                 "seeds and pages) | per seed | loops by kind | CER | tokens/page |",
                 "|---|---|---|---|---|---|---|"]  # fmt: skip
        for group, pooled in summary["over_seeds"].items():
            low, high = pooled["ci95"]
            kinds_seen = ", ".join(f"{k} {n}" for k, n in pooled["by_kind"].items() if n) or "-"
            rows.append(f"| {group} | {len(pooled['seeds'])} | {pooled['rate']:.3f} "
                        f"({low:.3f}-{high:.3f}) | "
                        f"{' / '.join(f'{r:.3f}' for r in pooled['rate_by_seed'])} | "
                        f"{kinds_seen} | {_number(pooled['cer'])} | "
                        f"{pooled['tokens_per_page']:.0f} |")  # fmt: skip
    rows.append(
        f"\n{summary['pages']} held-out pages ({summary['base_never_looped']} where the base's "
        "greedy attempt did not loop); intervals: 95% Wilson over pages; fixed / made: pages "
        "where the base's greedy attempt looped and the arm's did not, and the reverse, with the "
        "exact McNemar p-value of that split; gate: what `folio train-dpo`'s promotion gate "
        "decides on the same first attempts (fewer loops with p <= 0.05, CER within +0.02)."
    )
    return "\n".join(rows)
