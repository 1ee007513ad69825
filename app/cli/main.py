"""The `folio` command line: parses input, calls the job facade, shows results."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from app.cli import distributed, exit_codes
from app.cli.api import apikey_app, serve
from app.cli.evaluate import eval_command
from app.cli.export_dpo import export_dpo
from app.cli.help import Panels, register, show_version
from app.cli.models import doctor, models
from app.cli.options import DatabaseUrl, JobId, SearchablePdf, console, load_settings
from app.cli.purge import purge
from app.cli.scan import scan
from app.cli.train import train_dpo_command
from app.cli.views import page_progress, summary_table
from app.cli.watch import watch
from app.db.engine import Database, upgrade
from app.errors import ConfigError, FolioError, ObjectRefused, StoreUnavailable
from app.jobs import JobRequest, publish_job, run_job_locally, settle_job, start_job
from app.jobs.results import JobResults, load_results, summary_of, write_outputs
from app.pdf.samples import write_samples
from app.report.build import build_report
from app.report.render import ReportFormat, render_report
from app.report.render_table import report_tables
from app.searchable.factory import searchable_writer
from app.settings import Settings
from app.storage import Stores, is_store_uri
from app.storage.base import local_path
from app.storage.listing import is_stored_source
from app.storage.options import StorageOptions
from app.storage.targets import result_target

__all__ = ["app", "load_settings", "main"]

app = typer.Typer(
    help="Folio: batch OCR for PDFs that catches text degeneration.\n\n"
    "Results go to --out; Folio's own state (the job database) to the data folder, "
    "~/.local/share/folio by default (FOLIO_DATA_DIR or FOLIO_DATABASE_URL move it).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version", callback=show_version, is_eager=True, help="Show Folio's version and exit."
        ),
    ] = False,
) -> None:
    # Only here for --version; the help text is the Typer's own.
    return


def run(
    source: Annotated[
        str,
        typer.Argument(
            help="A PDF, a folder searched recursively for PDFs (a path or file://), an "
            "s3://bucket/prefix/, or a manifest (.txt, local or s3://) with one s3:// URI per line."
        ),
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out", "-o", help="Folder (a path or file://), or s3:// prefix, for the results."
        ),
    ] = "out",
    engine: Annotated[
        str | None, typer.Option(help="Attempt plan: auto, textlayer, tesseract, vlm, or your own.")
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Pages processed at once.")] = None,
    dpi: Annotated[int | None, typer.Option(help="Rendering resolution.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Redo documents already done.")] = False,
    pdf: SearchablePdf = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Transcribe every PDF under SOURCE in this process and write results to --out."""
    settings = load_settings(concurrency=concurrency, database_url=database_url, engine=engine)
    if not is_stored_source(source) and not local_path(source).exists():
        console.print(f"[red]No such file or folder:[/] {source}")
        raise typer.Exit(exit_codes.NO_INPUT)
    db = Database(settings.database_url)
    request = JobRequest(source, out, engine or settings.engine, force=force, dpi=dpi, pdf=pdf)
    try:
        ingested = start_job(settings, db, request)
    except (ObjectRefused, StoreUnavailable) as exc:  # a missing bucket, a denied listing
        console.print(f"[red]Cannot list {source}:[/] {exc}")
        raise typer.Exit(exit_codes.NO_INPUT) from exc
    except (ConfigError, KeyError, FolioError) as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(exit_codes.CONFIG) from exc
    if ingested.documents == 0:
        console.print(f"[yellow]No PDF found under {source}[/]")
        raise typer.Exit(exit_codes.NO_INPUT)
    if ingested.resumed:
        console.print(
            f"[cyan]Resuming job {ingested.job_id}, interrupted earlier: "
            f"{len(ingested.page_ids)} page(s) left.[/]"
        )
    if ingested.page_ids:
        _run_pages(settings, db, ingested.job_id, ingested.page_ids)
    else:
        settle_job(db, ingested.job_id)
    results = load_results(db, ingested.job_id)
    _write_results(settings, db, results, out)
    _show_run(results, db, settings, out, worked=bool(ingested.page_ids))
    if not results.all_pages_have_output:
        raise typer.Exit(exit_codes.SOME_FAILED)


def _write_results(settings: Settings, db: Database, results: JobResults, out: str) -> None:
    """A folder gets the files; an s3:// prefix gets them and the report (`report.json`).
    A searchable PDF not written is said here and in summary.json; the rest is written."""
    try:
        if is_store_uri(out):
            target = result_target(out, Stores(StorageOptions.of(settings).s3))
            publish_job(settings, db, results.job_id, target)
        else:
            with searchable_writer(settings, results.pdf) as pdfs:
                missing = write_outputs(results, local_path(out), pdfs)
            for file, reason in missing.items():
                console.print(f"[yellow]No searchable PDF for {file}:[/] {reason}")
    except FolioError as exc:
        console.print(f"[red]Results not written to {out}:[/] {exc}")
        raise typer.Exit(exit_codes.SOME_FAILED) from exc


def _run_pages(settings: Settings, db: Database, job_id: str, page_ids: list[int]) -> None:
    try:
        with page_progress(console, len(page_ids), "pages") as on_page:
            run_job_locally(settings, db, job_id, page_ids, on_page)
    except KeyboardInterrupt as exc:
        console.print(
            f"[yellow]Interrupted.[/] Job {job_id} keeps its finished pages; "
            "run the same command again to finish it."
        )
        raise typer.Exit(exit_codes.INTERRUPTED) from exc


def _show_run(
    results: JobResults, db: Database, settings: Settings, out: str, worked: bool
) -> None:
    """The summary of a run; a rerun with nothing left to do says so in one line."""
    skipped = len(results.skipped)
    if results.nothing_to_do:
        console.print(
            f"Nothing to do: {skipped} documents already done in {out}; --force redoes them."
        )
    else:
        if skipped:
            console.print(f"[cyan]Skipped {skipped} documents already done in {out}.[/]")
        stdout = Console()
        stdout.print(summary_table(results))
        if worked:
            for table in report_tables(build_report(db, settings, results.job_id).report):
                stdout.print(table)
    console.print(f"Results in [bold]{out}[/]; job id [bold]{results.job_id}[/]")


def db_upgrade(database_url: DatabaseUrl = None) -> None:
    """Apply the Alembic migrations to the configured database."""
    settings = load_settings(database_url=database_url)
    upgrade(settings.database_url)
    console.print("[green]Database schema is up to date.[/]")


def results(
    job_id: JobId,
    out: Annotated[
        str,
        typer.Option("--out", "-o", help="Folder, or s3:// prefix, to (re)write results to."),
    ],
    database_url: DatabaseUrl = None,
) -> None:
    """Write a finished job's Markdown/JSON results to a folder or an s3:// prefix."""
    settings = load_settings(database_url=database_url)
    db = Database(settings.database_url)
    try:
        loaded = load_results(db, job_id)
    except KeyError as exc:
        console.print(f"[red]No job {job_id!r} in {settings.database_url}[/]")
        raise typer.Exit(exit_codes.NO_INPUT) from exc
    _write_results(settings, db, loaded, out)
    console.print(summary_of(loaded)["pages_total"], "pages written to", out)


def report(
    job_id: JobId,
    fmt: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="json, csv, html or table.")
    ] = ReportFormat.JSON,
    attempts: Annotated[
        bool, typer.Option("--attempts", help="CSV: one row per attempt instead of per page.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write to this file, not standard output.")
    ] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """What a job cost, how much of it degeneration ate, and what Folio saved."""
    settings = load_settings(database_url=database_url)
    try:
        job = build_report(Database(settings.database_url), settings, job_id)
    except KeyError as exc:
        console.print(f"[red]No job {job_id!r} in {settings.database_url}[/]")
        raise typer.Exit(exit_codes.NO_INPUT) from exc
    if out is None and fmt is ReportFormat.TABLE:
        for table in report_tables(job.report):
            Console().print(table)
        return
    text = render_report(job, fmt, per_attempt=attempts)
    if out is None:
        typer.echo(text, nl=False)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    console.print(f"Report written to [bold]{out}[/]")


def samples(
    folder: Annotated[Path, typer.Argument(help="Where to write the demo PDFs.")],
    broken: Annotated[
        bool, typer.Option("--broken", help="Add an encrypted, a corrupt, an empty and a non-PDF.")
    ] = False,
) -> None:
    """Write a small folder of demo PDFs (born-digital, scanned, mixed) to try Folio on."""
    written = write_samples(folder, broken=broken)
    console.print(f"Wrote {len(written)} PDFs to [bold]{folder}[/]")


db_app.command("upgrade")(db_upgrade)

# THE place that adds commands to `folio`. `folio --help` shows them in these panels, in this
# order: the order a user meets them (try it on a folder, serve it, scale it out, maintain it).
# A new command goes into the panel where a user would look for it; tests/test_cli_help.py fails
# on a command registered elsewhere (it would land in an unnamed panel above these) and
# tests/test_docs.py on one missing from docs/cli.md's command table.
COMMAND_PANELS: Panels = {
    "Transcribe and inspect": [
        ("run", run),
        ("report", report),
        ("results", results),
        ("scan", scan),
        ("export-dpo", export_dpo),
        ("train-dpo", train_dpo_command),
        ("eval", eval_command),
    ],
    "Serve": [
        ("serve", serve),
        ("apikey", apikey_app),
        ("watch", watch),
        ("models", models),
        ("doctor", doctor),
    ],
    "Distributed mode": [
        ("submit", distributed.submit),
        ("worker", distributed.worker),
        ("status", distributed.status),
        ("cancel", distributed.cancel),
        ("recover", distributed.recover),
    ],
    "Maintenance": [("db", db_app), ("purge", purge), ("samples", samples)],
}
register(app, COMMAND_PANELS)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    app()
