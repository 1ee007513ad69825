"""The dose study's hyperparameter candidates and the figures one is chosen on (`dose.sweep`)."""

from __future__ import annotations

from typing import Any


def candidate(spec: str) -> tuple[float, float, float]:
    """A sweep candidate "LEARNING_RATE:BETA:EPOCHS" as numbers."""
    lr, beta, epochs = (float(x) for x in spec.split(":"))
    return lr, beta, epochs


def sweep_label(spec: str) -> str:
    """The model a sweep candidate trains, served and read under this label."""
    return "hp-" + "-".join(f"{x:g}" for x in candidate(spec))


def validation_figures(readings: dict[str, Any], label: str) -> dict[str, Any]:
    """A candidate's loop rate on the validation pages, and its CER on the pages the base read
    without a loop against the base's, each page's CER capped at 1: the base's answers on the
    pool's forms run rules of underscores past the truth (CER up to 1.7 on a page it read
    without a verdict), and uncapped they outweighed a model that wrote garbage on every page
    (`locale; (_(_(_(`, CER 0.75 each: the first sweep chose it, docs/training.md)."""
    base = readings["base"]["validation"]["base.greedy"]["pages"]
    pages_ = readings[label]["validation"][f"{label}.greedy"]["pages"]
    healthy = [n for n, row in base.items() if row["first"] is None]
    cer = [min(1.0, pages_[n]["cer"] or 0.0) for n in healthy if n in pages_]
    cer_base = [min(1.0, base[n]["cer"] or 0.0) for n in healthy if n in pages_]
    rise = (sum(cer) - sum(cer_base)) / max(1, len(cer))
    return {
        "rate": round(sum(r["first"] is not None for r in pages_.values()) / len(pages_), 4),
        "cer": round(sum(cer) / max(1, len(cer)), 4),
        "cer_rise": round(rise, 4),
    }
