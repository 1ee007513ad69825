"""What people see: progress bars and summary tables."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from app.domain import PageStatus
from app.jobs.results import JobResults
from app.pipeline.local import PageCallback
from app.report.fit import FittedTable

STATUS_STYLE = {
    "done": "green",
    "succeeded": "green",
    "fallback": "yellow",
    "partial": "yellow",
    "skipped": "cyan",
    "failed": "red",
}

TALLY_ORDER = [s.value for s in PageStatus]
TALLY_LABEL = {"succeeded": "ok"}


@contextmanager
def page_progress(console: Console, total: int, label: str) -> Iterator[PageCallback]:
    """A live bar over pages; yields the callback the executor calls per finished page."""
    counts: Counter[str] = Counter()
    with Progress(*_columns(console.width, label, total), console=console) as progress:
        task = progress.add_task(label, total=total, tally="")

        def on_page(_page_id: int, status: PageStatus) -> None:
            counts[status.value] += 1
            tally = " ".join(
                f"[{STATUS_STYLE.get(k, 'white')}]{TALLY_LABEL.get(k, k)} {v}[/]"
                for k, v in sorted(counts.items(), key=lambda kv: TALLY_ORDER.index(kv[0]))
            )
            progress.update(task, advance=1, tally=tally)

        yield on_page


def _columns(width: int, label: str, total: int) -> list[ProgressColumn]:
    """The bar's columns for this terminal: the bar takes what the figures leave (at most 40),
    and the time remaining goes first when it would squeeze the bar, so nothing is cut."""
    widest_tally = f"ok {total} fallback {total} failed {total}"
    figures = 2 + len(label) + 1 + 2 * len(str(total)) + 2 + len(widest_tally) + 1 + 7
    bar = width - figures - 2  # one space between columns
    remaining = bar - 8 >= 10
    columns: list[ProgressColumn] = [
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=max(5, min(40, bar - 8 if remaining else bar))),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tally]}"),
        TimeElapsedColumn(),
    ]
    return [*columns, TimeRemainingColumn()] if remaining else columns


def summary_table(results: JobResults) -> FittedTable:
    """One row per document; a skipped one shows the pages the earlier job left it with."""
    title = f"Job {results.job_id} ({results.plan})"
    table = Table(title=title, show_lines=False)
    for column in ("document", "status", "pages", "ok", "fallback", "failed", "reason"):
        numeric = column in ("pages", "ok", "fallback", "failed")
        table.add_column(column, justify="right" if numeric else "left")
    for doc in results.documents:
        counts = Counter(p.status for p in doc.pages)
        style = STATUS_STYLE.get(doc.status, "white")
        table.add_row(
            doc.name,
            f"[{style}]{doc.status}[/]",
            str(doc.page_count),
            str(counts[PageStatus.SUCCEEDED]),
            str(counts[PageStatus.FALLBACK]),
            str(counts[PageStatus.FAILED]),
            doc.error or "",
        )
    pages = results.page_counts()
    table.caption = (
        f"{len(results.documents)} documents, {sum(pages.values())} pages: "
        f"{pages[PageStatus.SUCCEEDED]} ok, {pages[PageStatus.FALLBACK]} by fallback, "
        f"{pages[PageStatus.FAILED]} failed"
    )
    if results.skipped:
        table.caption += f" ({len(results.skipped)} documents done earlier)"
    return FittedTable(table, drop_order=("fallback",))
