"""The training card: what data made the model, how, and how the run went (JSON, Markdown, SVG)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

CURVES = (
    ("loss", "#3b7dd8"),
    ("rewards/margins", "#2ca02c"),
    ("rewards/accuracies", "#ff7f0e"),
)
WIDTH, HEIGHT, PAD = 720, 260, 40


def write_card(dest: Path, card: dict[str, Any]) -> None:
    (dest / "training_card.json").write_text(
        json.dumps(card, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
    )
    (dest / "training_curves.svg").write_text(curves_svg(card["curves"]), encoding="utf-8")
    (dest / "TRAINING_CARD.md").write_text(card_markdown(card), encoding="utf-8")


def curves_svg(rows: Sequence[dict[str, float]]) -> str:
    """Loss, reward margin and reward accuracy per step, one panel each, stacked."""
    panels = [_panel(rows, key, colour, i) for i, (key, colour) in enumerate(CURVES)]
    height = HEIGHT * len(CURVES)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="training curves">'
        + "".join(panels)
        + "</svg>\n"
    )


def _panel(rows: Sequence[dict[str, float]], key: str, colour: str, index: int) -> str:
    top = index * HEIGHT
    points = [(r["step"], r[key]) for r in rows if key in r]
    title = f'<text x="{PAD}" y="{top + 20}" font-size="13">{escape(key)} by step</text>'
    if not points:
        return title + f'<text x="{PAD}" y="{top + 60}" font-size="11">not logged</text>'
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs) or 1.0
    y0, y1 = min(ys), max(ys)
    if y1 == y0:
        y0, y1 = y0 - 1.0, y1 + 1.0
    plot_w, plot_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD

    def xy(x: float, y: float) -> str:
        px = PAD + plot_w * ((x - x0) / ((x1 - x0) or 1.0))
        py = top + PAD + plot_h * (1 - (y - y0) / (y1 - y0))
        return f"{px:.1f},{py:.1f}"

    axis = (
        f'<rect x="{PAD}" y="{top + PAD}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#999"/>'
        f'<text x="{PAD - 4}" y="{top + PAD + 4}" font-size="10" text-anchor="end">{y1:.3g}</text>'
        f'<text x="{PAD - 4}" y="{top + PAD + plot_h}" font-size="10" text-anchor="end">'
        f"{y0:.3g}</text>"
        f'<text x="{WIDTH - PAD}" y="{top + HEIGHT - 10}" font-size="10" text-anchor="end">'
        f"step {x1:.0f}</text>"
    )
    line = " ".join(xy(x, y) for x, y in points)
    return (
        title
        + axis
        + f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{line}"/>'
    )


def card_markdown(card: dict[str, Any]) -> str:
    counts = card["pairs"]
    first = card["curves"][0] if card["curves"] else {}
    last = card["curves"][-1] if card["curves"] else {}
    lines = [
        f"# Training card: {card['output']}",
        "",
        f"DPO ({card['config']['method']}) on `{card['base_model']}`, "
        f"{card['steps']} steps in {card['train_seconds']:.0f} s on {card['device']}.",
        "",
        f"- pairs trained on: {counts['train']}; pages held out: {counts['held_out_pages']} "
        f"({counts['held_out']} pairs, listed in held_out_pages.json)",
        f"- by loop kind: {_inline(counts['by_loop_kind'])}",
        f"- chosen side from: {_inline(counts['by_chosen_source'])}",
        f"- loss: {first.get('loss', float('nan')):.4f} -> {last.get('loss', float('nan')):.4f}; "
        f"reward margin: {first.get('rewards/margins', float('nan')):.4f} -> "
        f"{last.get('rewards/margins', float('nan')):.4f}",
        *_dose_lines(card.get("dose")),
        *_memory_lines(card.get("memory") or {}),
        *_gate_lines(card.get("gate")),
        *_seed_lines(card.get("seeds"), card.get("chosen_seed")),
        "",
        "Curves: training_curves.svg. Config and data hashes: training_card.json.",
        "",
        "A lower loss says the model now prefers the chosen side of the training pairs; "
        "whether it loops less on new pages is what the gate (GATE_VERDICT.md) and `folio eval` "
        "on the held-out pages measure.",
        "",
    ]
    return "\n".join(lines)


def _inline(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def _dose_lines(dose: dict[str, Any] | None) -> list[str]:
    if not dose:
        return []
    if not dose["below"]:
        return [f"- dose: {dose['pairs']} pairs, at or above the {dose['recommended']} recommended"]
    return [
        f"- **dose: {dose['pairs']} pairs, below the {dose['recommended']} the flywheel bench's "
        "dose curve needs**: at that dose the training seed moved the loop rate more than "
        "training did (docs/training.md)"
    ]


def _seed_lines(seeds: list[dict[str, Any]] | None, chosen: int | None) -> list[str]:
    if not seeds:
        return []
    runs = "; ".join(
        f"seed {row['seed']}: {row['decision']}, {row['loops']} of {row['pages']} looped"
        for row in seeds
    )
    return [f"- seeds trained: {runs}; kept: seed {chosen} (the gate's choice)"]


def _memory_lines(memory: dict[str, Any]) -> list[str]:
    preflight = memory.get("preflight")
    if not preflight:
        return []
    measured = memory.get("measured_peak_bytes")
    seen = f"{measured / 1024**3:.2f} GiB ({memory['measured_by']})" if measured else "not measured"
    return [
        f"- memory: estimated peak {preflight['estimated_peak_bytes'] / 1024**3:.2f} GiB, "
        f"measured {seen}; batch {preflight['batch_size']} x accumulation "
        f"{preflight['grad_accum']} ({preflight['note']})"
    ]


def _gate_lines(gate: dict[str, Any] | None) -> list[str]:
    if not gate:
        return ["- promotion gate: not run (--no-gate)"]
    base, tuned = gate["base"], gate["tuned"]
    why = "; ".join(gate["reasons"]) or "loops less, accuracy held"
    return [
        f"- promotion gate: **{gate['decision']}** ({why}); loops on held-out pages: base "
        f"{base['loops']} of {base['pages']}, tuned {tuned['loops']} of {tuned['pages']}; "
        f"{gate['evidence']} (GATE_VERDICT.md)"
    ]
