"""`folio purge`: delete the files of jobs that ended long ago (parse, delegate, show)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from app.cli.options import DatabaseUrl, console, load_settings
from app.db.engine import Database
from app.jobs.retention import purge as purge_files


def purge(
    older_than: Annotated[
        float,
        typer.Option("--older-than", min=0, help="Days since a job ended (done or cancelled)."),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list what would be deleted.")
    ] = False,
    with_rows: Annotated[
        bool,
        typer.Option(
            "--with-rows", help="Also delete those jobs' database rows (reports on them end)."
        ),
    ] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Delete upload folders and stray result zips of jobs that ended over N days ago."""
    settings = load_settings(database_url=database_url)
    db = Database(settings.database_url)
    report = purge_files(db, settings.upload_dir, older_than, dry_run=dry_run, with_rows=with_rows)
    verb = "Would delete" if dry_run else "Deleted"
    out = Console()
    for path in [*report.folders, *report.zips]:
        out.print(f"{verb} {path}")
    rows = f"; {report.rows_deleted} job(s) removed from the database" if with_rows else ""
    if with_rows and dry_run:
        rows = f"; would remove {len(report.jobs)} job(s) from the database"
    console.print(
        f"{verb} {len(report.folders)} upload folder(s) and {len(report.zips)} result zip(s), "
        f"{report.bytes / 2**20:.1f} MiB, of {len(report.jobs)} job(s) ended before "
        f"{report.cutoff.isoformat(timespec='seconds')}{rows}."
    )
