"""The `folio` command line: parses input, calls the job facade, shows results."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from app.cli import distributed, exit_codes
from app.cli.api import apikey_app, serve
from app.cli.evaluate import eval_command
from app.cli.export_dpo import export_dpo
from app.cli.scan import scan
from app.cli.train import train_dpo_command
from app.cli.views import page_progress, summary_table
from app.cli.watch import watch
from app.db.engine import Database, upgrade
from app.errors import ConfigError
from app.jobs import JobRequest, create_job_from_folder, run_job_locally
from app.report.build import build_report
from app.report.render import ReportFormat, render_report
from app.report.render_table import report_tables
from app.results import load_results, summary_of, write_outputs
from app.samples import write_samples
from app.settings import Settings

app = typer.Typer(
    help="Folio: batch OCR for PDFs that catches text degeneration.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
app.command("export-dpo")(export_dpo)
app.command("train-dpo")(train_dpo_command)
app.command("eval")(eval_command)
app.command("scan")(scan)
for _command in (distributed.submit, distributed.status, distributed.worker, distributed.recover):
    app.command()(_command)
app.add_typer(db_app, name="db")
app.add_typer(apikey_app, name="apikey")
app.command("serve")(serve)
app.command("watch")(watch)
console = Console(stderr=True)


def load_settings(**overrides: Any) -> Settings:
    """Settings from env/folio.toml, with the command line's explicit values on top."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        console.print(f"[red]Invalid settings:[/] {exc}")
        raise typer.Exit(exit_codes.CONFIG) from exc


@app.command()
def run(
    source: Annotated[
        Path, typer.Argument(help="A PDF, or a folder searched recursively for PDFs.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the results.")] = Path("out"),
    engine: Annotated[
        str | None, typer.Option(help="Attempt plan: auto, textlayer, tesseract, vlm, or your own.")
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Pages processed at once.")] = None,
    dpi: Annotated[int | None, typer.Option(help="Rendering resolution.")] = None,
    force: Annotated[bool, typer.Option(help="Redo documents already done in --out.")] = False,
    database_url: Annotated[str | None, typer.Option(help="Overrides FOLIO_DATABASE_URL.")] = None,
) -> None:
    """Transcribe every PDF under SOURCE in this process and write results to --out."""
    settings = load_settings(concurrency=concurrency, database_url=database_url, engine=engine)
    if not source.exists():
        console.print(f"[red]No such file or folder:[/] {source}")
        raise typer.Exit(exit_codes.NO_INPUT)
    db = Database(settings.database_url)
    request = JobRequest(source, out, engine or settings.engine, force=force, dpi=dpi)
    try:
        ingested = create_job_from_folder(settings, db, request)
    except (ConfigError, KeyError) as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(exit_codes.CONFIG) from exc
    if ingested.documents == 0:
        console.print(f"[yellow]No PDF found under {source}[/]")
        raise typer.Exit(exit_codes.NO_INPUT)
    if ingested.skipped:
        console.print(
            f"[cyan]Skipping {len(ingested.skipped)} document(s) already done in {out} "
            "(same content); --force redoes them.[/]"
        )
    with page_progress(console, len(ingested.page_ids), "pages") as on_page:
        run_job_locally(settings, db, ingested.job_id, ingested.page_ids, on_page)
    results = load_results(db, ingested.job_id)
    write_outputs(results, out)
    stdout = Console()
    stdout.print(summary_table(results))
    for table in report_tables(build_report(db, settings, ingested.job_id).report):
        stdout.print(table)
    console.print(f"Results in [bold]{out}[/]; job id [bold]{results.job_id}[/]")
    if not results.all_pages_have_output:
        raise typer.Exit(exit_codes.SOME_FAILED)


@db_app.command("upgrade")
def db_upgrade(
    database_url: Annotated[str | None, typer.Option(help="Overrides FOLIO_DATABASE_URL.")] = None,
) -> None:
    """Apply the Alembic migrations to the configured database."""
    settings = load_settings(database_url=database_url)
    upgrade(settings.database_url)
    console.print("[green]Database schema is up to date.[/]")


@app.command()
def results(
    job_id: Annotated[str, typer.Argument(help="Job id, as printed by `folio run`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to (re)write results to.")],
) -> None:
    """Write a finished job's Markdown/JSON results to a folder."""
    settings = load_settings()
    loaded = load_results(Database(settings.database_url), job_id)
    write_outputs(loaded, out)
    console.print(summary_of(loaded)["pages_total"], "pages written to", out)


@app.command()
def report(
    job_id: Annotated[str, typer.Argument(help="Job id, as printed by `folio run`.")],
    fmt: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="json, csv, html or table.")
    ] = ReportFormat.JSON,
    attempts: Annotated[
        bool, typer.Option("--attempts", help="CSV: one row per attempt instead of per page.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write to this file, not standard output.")
    ] = None,
    database_url: Annotated[str | None, typer.Option(help="Overrides FOLIO_DATABASE_URL.")] = None,
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


@app.command()
def samples(
    folder: Annotated[Path, typer.Argument(help="Where to write the demo PDFs.")],
    broken: Annotated[
        bool, typer.Option(help="Add an encrypted, a corrupt, an empty and a non-PDF file.")
    ] = False,
) -> None:
    """Write a small folder of demo PDFs (born-digital, scanned, mixed) to try Folio on."""
    written = write_samples(folder, broken=broken)
    console.print(f"Wrote {len(written)} PDFs to [bold]{folder}[/]")


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    app()
