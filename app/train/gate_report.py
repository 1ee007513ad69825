"""The gate's verdict as files in the output folder: `gate_verdict.json` (the figures, the
policy and every page's reading) and `GATE_VERDICT.md` (the decision and why, in words)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.train.gate import ArmFigures, PageReading, Verdict

VERDICT_JSON, VERDICT_MD = "gate_verdict.json", "GATE_VERDICT.md"


def write_verdict(
    dest: Path,
    verdict: Verdict,
    base: Sequence[PageReading],
    tuned: Sequence[PageReading],
    reading: dict[str, Any],
) -> None:
    """`reading`: how the pages were read (device, token cap, pages by origin, seconds)."""
    record = {
        **verdict.to_dict(),
        "reading": reading,
        "pages": [
            {"page": b.page, "base": asdict(b), "tuned": asdict(t)}
            for b, t in zip(base, tuned, strict=True)
        ],
    }
    (dest / VERDICT_JSON).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (dest / VERDICT_MD).write_text(verdict_markdown(verdict, reading), encoding="utf-8")


def verdict_summary(verdict: Verdict) -> dict[str, Any]:
    """The training card's `gate` section: the decision and the headline figures."""
    return {
        "decision": verdict.decision,
        "reasons": list(verdict.reasons),
        "evidence": verdict.evidence,
        "base": _headline(verdict.base),
        "tuned": _headline(verdict.tuned),
    }


def verdict_markdown(verdict: Verdict, reading: dict[str, Any]) -> str:
    decision = "**Promote the tuned model.**" if verdict.promote else "**Keep the base model.**"
    why = [f"- {reason}" for reason in verdict.reasons] or [
        "- it loops on fewer held-out pages, and the split is unlikely to be chance; accuracy "
        "and length held within the tolerances"
    ]
    policy = verdict.policy
    return "\n".join(
        [
            "# Promotion gate",
            "",
            decision,
            "",
            *why,
            "",
            f"Evidence: {verdict.evidence}.",
            "",
            "| model | loops (95% CI) | by kind | CER | CER, base-healthy pages | "
            "tokens/page | tokens, base-healthy pages |",
            "|---|---|---|---|---|---|---|",
            _row("base", verdict.base),
            _row("tuned", verdict.tuned),
            "",
            f"Pages: {reading.get('pages_by_origin')} (`looped`: held-out pairs' pages, where the "
            "batch's first attempt looped; `healthy`: pages it read without looping, never "
            f"trained on). Read greedily on {reading.get('device')}, at most "
            f"{reading.get('max_tokens')} tokens a page, each answer stopped and judged by "
            "Folio's loop detector; CER against the answer the batch accepted.",
            "",
            f"Policy: fewer loops than the base with McNemar p <= {policy.max_p:g}; CER at most "
            f"+{policy.max_cer_increase:g} on all pages and on the pages the base read without "
            f"looping; tokens per page on those at most +{policy.max_token_increase:.0%}.",
            "",
        ]
    )


def _headline(figures: ArmFigures) -> dict[str, Any]:
    return {
        "pages": figures.pages,
        "loops": figures.loops,
        "loop_rate": figures.loop_rate,
        "ci95": list(figures.ci95),
        "cer": figures.cer,
        "tokens_per_page": figures.tokens_per_page,
    }


def _row(label: str, f: ArmFigures) -> str:
    kinds = ", ".join(f"{k} {v}" for k, v in f.loops_by_kind.items()) or "-"
    return (
        f"| {label} | {f.loops} of {f.pages}: {f.loop_rate:.3f} ({f.ci95[0]:.3f}-{f.ci95[1]:.3f}) "
        f"| {kinds} | {_num(f.cer)} | {_num(f.cer_base_healthy)} | {_num(f.tokens_per_page, 0)} "
        f"| {_num(f.tokens_base_healthy, 0)} |"
    )


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
