"""`folio watch INBOX`: the upload folder, run until interrupted."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from app.cli import exit_codes
from app.cli.options import DatabaseUrl, console, load_settings
from app.cli.views import page_progress
from app.db.engine import Database
from app.jobs.watch import MAX_BATCH_TRIES, BatchOutcome, InboxBusy, Watcher, inbox_lock
from app.report.fit import FittedTable


def watch(
    inbox: Annotated[Path, typer.Argument(help="Folder to watch for PDFs.")],
    outbox: Annotated[
        Path | None, typer.Option(help="Where results go; INBOX/outbox by default.")
    ] = None,
    once: Annotated[
        bool,
        typer.Option(
            "--once", help="Take the files that are complete now as one batch, then exit."
        ),
    ] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Turn PDFs dropped into INBOX into jobs; results to the outbox, originals to done/failed."""
    settings = load_settings(database_url=database_url)
    watcher = Watcher(
        settings,
        Database(settings.database_url),
        inbox,
        outbox or inbox / "outbox",
        progress=lambda total, label: page_progress(console, total, f"batch {label}"),
    )
    try:
        with inbox_lock(inbox):
            for outcome in watcher.recover():
                show(outcome)
            _loop(watcher, settings.watch_poll_s, once)
    except InboxBusy as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(exit_codes.BUSY) from exc
    except KeyboardInterrupt:
        console.print("Stopped; files being processed are finished on the next start.")


def _loop(watcher: Watcher, poll_s: float, once: bool) -> None:
    if not once:
        console.print(f"Watching [bold]{watcher.inbox}[/] (Ctrl+C stops)")
    while True:
        for retried in watcher.retry():
            show(retried)
        outcome = watcher.tick()
        if outcome:
            show(outcome)
        if once:
            time.sleep(poll_s)
            outcome = watcher.tick(close_window=True)
            if outcome:
                show(outcome)
            for _ in range(MAX_BATCH_TRIES):  # a batch that failed: its tries, then failed/
                for retried in watcher.retry():
                    show(retried)
            return
        time.sleep(poll_s)


def show(outcome: BatchOutcome) -> None:
    table = Table("file", "result", "reason", title=f"Batch {outcome.batch} (job {outcome.job_id})")
    for name in outcome.done:
        table.add_row(name, "[green]done[/]", "")
    for name, reason in outcome.failed.items():
        table.add_row(name, "[red]failed[/]", reason)
    Console().print(FittedTable(table))
    console.print(f"Results in [bold]{outcome.outbox}[/]")
