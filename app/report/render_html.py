"""The report as one self-contained HTML page: inline CSS and SVG, nothing fetched."""

from __future__ import annotations

from html import escape

from app.report.compute import JobReport
from app.report.fallback_worth import WORTH_COLUMNS, WORTH_NOTE, worth_cells
from app.report.format import MODEL_COLUMNS, model_cells, pct, ratio, seconds, usd
from app.report.schema import Report
from app.report.svg_charts import MAX_BARS, bar_chart_svg, box_plot_svg, timeline_svg
from app.report.timeline import split_healthy

CHART_IDS = ("chart-timeline", "chart-slowdown", "chart-tokens", "chart-cost")

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 960px; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr));
  gap: .6rem; }
.figure { border: 1px solid #ddd; border-radius: 6px; padding: .5rem .7rem; }
.figure b { display: block; font-size: 1.2rem; }
table { border-collapse: collapse; width: 100%; } td, th { padding: .2rem .5rem; text-align: left; }
tr:nth-child(even) { background: #f6f6f6; } td.n, th.n { text-align: right; }
pre { white-space: pre-wrap; word-break: break-all; background: #fbeaea; padding: .5rem; }
.legend span { display: inline-block; margin-right: 1rem; } .note { color: #666; }
"""

# Runs in the page: the headless-browser test reads this line from the console.
_CHECK = """
(function () {
  var ids = %s;
  var missing = ids.filter(function (id) {
    var el = document.getElementById(id);
    return !el || el.tagName.toLowerCase() !== "svg";
  });
  if (missing.length) { console.error("folio-report-missing " + missing.join(",")); }
  else { console.log("folio-report-ok"); }
})();
"""


def render_html(job: JobReport) -> str:
    r = job.report
    pages = {p.id: f"{p.document} p{p.number}" for p in job.rows.pages}
    outcomes = list(r.by_outcome.items())
    sections = [
        f"<h1>Folio report: job {escape(r.job_id)}</h1>",
        f'<p class="note">plan {escape(r.plan)}, status {escape(r.job_status)}, '
        f"schema {r.schema_version}</p>",
        _figures(r),
        "<h2>Request timeline</h2>",
        _legend(len(job.rows.attempts)),
        timeline_svg(job.rows.attempts, pages),
        "<h2>Healthy attempts with and without a concurrent degenerate attempt</h2>",
        box_plot_svg(split_healthy(job.rows.attempts)),
        "<h2>Tokens and cost by outcome</h2>",
        bar_chart_svg(
            "chart-tokens",
            "generated tokens",
            [(k, float(v.tokens_generated)) for k, v in outcomes],
            lambda v: f"{v:,.0f}",
        ),
        bar_chart_svg("chart-cost", "cost (USD)", [(k, v.cost_usd) for k, v in outcomes], usd),
        _per_model(r),
        _slowest(r),
        _fallback_worth(r),
        _degenerate(r),
        "<h2>Method</h2>",
        f"<p>{escape(r.cost_attribution)}</p><p>{escape(r.inflation_method)}</p>",
    ]
    check = _CHECK % ("[" + ",".join(f'"{i}"' for i in CHART_IDS) + "]")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Folio report {escape(r.job_id)}</title><style>{_CSS}</style></head>"
        f"<body>{''.join(sections)}<script>{check}</script></body></html>\n"
    )


def _figures(r: Report) -> str:
    cards = [
        ("pages", f"{r.pages_total}", f"{r.pages_fallback} by fallback, {r.pages_failed} failed"),
        (
            "degenerate at first attempt",
            pct(r.degeneration_rate_first_attempt),
            f"{pct(r.degeneration_rate_final)} in the end",
        ),
        ("cost", usd(r.cost_usd), f"{usd(r.cost_per_1k_pages)} per 1k pages"),
        (
            "cost of degeneration",
            usd(r.cost_usd_degenerate),
            f"{pct(r.degeneration_share_of_engine_time)} of engine time",
        ),
        (
            "wall-clock inflation",
            pct(r.inflation_estimate),
            r.inflation_unknown_reason or f"wall {seconds(r.wall_seconds)}",
        ),
        _server_card(r),
        (
            "healthy slowdown beside a loop",
            ratio(r.healthy_slowdown_with_concurrent_degenerate),
            "mean duration, with vs without",
        ),
        (
            "tokens saved by abort",
            f"{r.tokens_saved_by_abort:,}",
            f"~{usd(r.cost_usd_saved_by_abort_estimate)}",
        ),
        (
            "attempts",
            f"{r.attempts_total}",
            f"{r.degenerate_attempts} degenerate, {r.invalid_attempts} invalid",
        ),
        (
            "false alarms (answer kept)",
            f"{r.false_alarm_pages} pages",
            f"{r.false_alarm_attempts} verdicts proved wrong; {r.confirming_attempts} "
            f"confirming attempts ({r.loops_confirmed} confirmed the loop), "
            f"{r.tokens_confirming:,} tokens; {r.verdicts_overruled} verdicts overruled "
            f"by the page's text; {r.verdict_reads} scans read at a verdict "
            f"({r.verdict_read_cpu_s:,.1f} CPU-s)",
        ),
    ]
    items = "".join(
        f'<div class="figure">{escape(name)}<b>{escape(value)}</b>{escape(sub)}</div>'
        for name, value, sub in cards
    )
    return f'<div class="figures">{items}</div>'


def _server_card(r: Report) -> tuple[str, str, str]:
    if r.server_tokens_generated is None:
        return ("tokens no attempt received", "n/a", r.server_tokens_reason or "")
    return (
        "tokens no attempt received",
        f"{r.server_tokens_unreceived or 0:,.0f}",
        f"of {r.server_tokens_generated:,.0f} the server generated; "
        f"{pct(r.server_degenerate_share)} degenerate server-side",
    )


def _legend(count: int) -> str:
    note = f" (first {MAX_BARS} of {count} shown)" if count > MAX_BARS else ""
    return (
        '<p class="legend"><span style="color:#3b7dd8">■ ok</span>'
        '<span style="color:#d62728">■ degenerate</span><span style="color:#9a9a9a">■ empty</span>'
        '<span style="color:#ff7f0e">■ error</span>'
        '<span style="color:#9467bd">■ false alarm</span>'
        f'<span style="color:#8c564b">■ transport error</span>{escape(note)}</p>'
    )


def _table(title: str, head: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    def cell(tag: str, i: int, text: str) -> str:
        return (
            f'<{tag} class="n">{escape(text)}</{tag}>'
            if i in numeric
            else f"<{tag}>{escape(text)}</{tag}>"
        )

    header = "".join(cell("th", i, h) for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<h2>{escape(title)}</h2><table><tr>{header}</tr>{body}</table>"


def _per_model(r: Report) -> str:
    rows = [[*model_cells(m), usd(m.cost_usd_degenerate)] for m in r.per_model]
    head = [*MODEL_COLUMNS, "degenerate cost"]
    return _table("By model", head, rows, {3, 4, 5, 6, 7, 8})


def _slowest(r: Report) -> str:
    rows = [
        [
            p.document,
            str(p.page),
            p.status,
            str(p.attempts),
            f"{p.engine_seconds:,.2f}",
            p.final_step or "",
        ]
        for p in r.slowest_pages
    ]
    head = ["document", "page", "status", "attempts", "seconds", "final step"]
    return _table("Slowest pages", head, rows, {1, 3, 4})


def _fallback_worth(r: Report) -> str:
    if not r.fallback_worth:
        return ""
    rows = [list(worth_cells(w)) for w in r.fallback_worth]
    title = "Pages read by an embedded reader, and what its text is worth"
    table = _table(title, list(WORTH_COLUMNS), rows, {1, 2, 3, 4, 5, 6})
    return f'{table}<p class="note">{escape(WORTH_NOTE)}</p>'


def _degenerate(r: Report) -> str:
    if not r.degenerate_pages:
        return "<h2>Degenerate pages</h2><p>No degenerate attempt.</p>"
    items = []
    for d in r.degenerate_pages:
        what = (
            f"{d.document} page {d.page}, step {d.step} ({d.model or 'unknown model'}): "
            f"{d.verdict_kind or 'degenerate'}, period {d.verdict_period}, "
            f"{d.tokens_generated} tokens{', aborted' if d.aborted else ''}"
        )
        items.append(f"<li>{escape(what)}<pre>{escape(d.tail)}</pre></li>")
    return f"<h2>Degenerate pages</h2><ul>{''.join(items)}</ul>"
