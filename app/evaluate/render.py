"""The evaluation as a terminal table, JSON and one self-contained HTML page with charts."""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape

from rich.table import Table

from app.evaluate.run import ArmResult, Evaluation
from app.report.format import pct, ratio, usd
from app.report.svg_charts import bar_chart_svg

CHART_IDS = ("chart-degeneration-first", "chart-degeneration-final", "chart-quality")


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


COLUMNS: tuple[tuple[str, Callable[[ArmResult], str]], ...] = (
    ("arm", lambda a: a.label),
    ("model", lambda a: ", ".join(a.models) or "n/a"),
    ("pages", lambda a: str(a.pages)),
    ("degenerate 1st", lambda a: pct(a.degeneration_rate_first_attempt)),
    ("degenerate final", lambda a: pct(a.degeneration_rate_final)),
    ("recovered", lambda a: str(a.pages_recovered)),
    ("CER", lambda a: _num(a.cer)),
    ("word F1", lambda a: _num(a.word_f1)),
    ("text-layer F1", lambda a: _num(a.textlayer_f1)),
    ("tokens/page", lambda a: _num(a.tokens_per_page, 1)),
    ("engine s/page", lambda a: _num(a.engine_seconds_per_page, 2)),
    ("$/1k pages", lambda a: usd(a.cost_per_1k_pages)),
    ("inflation", lambda a: ratio(a.inflation_estimate)),
)


def eval_table(evaluation: Evaluation) -> Table:
    table = Table(title=f"folio eval: {evaluation.source}")
    for name, _ in COLUMNS:
        table.add_column(name, justify="left" if name in ("arm", "model") else "right")
    for arm in evaluation.arms:
        table.add_row(*(cell(arm) for _, cell in COLUMNS))
    return table


def eval_json(evaluation: Evaluation) -> str:
    return json.dumps(evaluation.to_dict(), indent=2, ensure_ascii=False) + "\n"


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; width: 100%; } td, th { padding: .2rem .5rem; }
th { text-align: left; } td.n { text-align: right; } tr:nth-child(even) { background: #f6f6f6; }
.note { color: #666; }
"""


def eval_html(evaluation: Evaluation) -> str:
    arms = evaluation.arms
    head = "".join(f"<th>{escape(name)}</th>" for name, _ in COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f'<td class="n">{escape(cell(a))}</td>' for _, cell in COLUMNS) + "</tr>"
        for a in arms
    )
    quality = [
        (a.label, a.word_f1 if a.word_f1 is not None else (a.textlayer_f1 or 0.0)) for a in arms
    ]
    parts = [
        f"<h1>folio eval: {escape(evaluation.source)}</h1>",
        f'<p class="note">pages: {escape(evaluation.pages_file or "all pages under the source")}; '
        f"ground truth: {escape(evaluation.truth_dir or 'none (text layer where usable)')}</p>",
        f"<table><tr>{head}</tr>{rows}</table>",
        "<h2>Degenerate pages at the first attempt</h2>",
        bar_chart_svg(
            CHART_IDS[0],
            "share of pages whose first attempt degenerated",
            [(a.label, a.degeneration_rate_first_attempt or 0.0) for a in arms],
            pct,
        ),
        "<h2>Degenerate pages after retries</h2>",
        bar_chart_svg(
            CHART_IDS[1],
            "share of pages still degenerate in the end",
            [(a.label, a.degeneration_rate_final or 0.0) for a in arms],
            pct,
        ),
        "<h2>Quality</h2>",
        bar_chart_svg(
            CHART_IDS[2],
            "word F1 against ground truth (else against the text layer)",
            quality,
            lambda v: f"{v:.3f}",
        ),
    ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>folio eval</title><style>{_CSS}</style></head><body>"
        + "".join(parts)
        + "</body></html>\n"
    )
