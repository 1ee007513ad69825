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
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from app.domain import PageStatus
from app.pipeline.local import PageCallback
from app.report.fit import FittedTable
from app.results import JobResults

STATUS_STYLE = {
    "done": "green",
    "succeeded": "green",
    "fallback": "yellow",
    "partial": "yellow",
    "skipped": "cyan",
    "failed": "red",
}


@contextmanager
def page_progress(console: Console, total: int, label: str) -> Iterator[PageCallback]:
    """A live bar over pages; yields the callback the executor calls per finished page."""
    counts: Counter[str] = Counter()
    columns = (
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tally]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(label, total=total, tally="")

        def on_page(_page_id: int, status: PageStatus) -> None:
            counts[status.value] += 1
            tally = " ".join(
                f"[{STATUS_STYLE.get(k, 'white')}]{k} {v}[/]" for k, v in sorted(counts.items())
            )
            progress.update(task, advance=1, tally=tally)

        yield on_page


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
