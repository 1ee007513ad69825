"""`folio submit`, `status`, `worker`, `recover`: distributed mode's commands (parse, delegate)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from app import distributed
from app.cli import exit_codes
from app.cli.options import (
    BrokerUrl,
    DatabaseUrl,
    JobId,
    SearchablePdf,
    console,
    load_settings,
)
from app.cli.views import STATUS_STYLE
from app.db.engine import Database
from app.distributed.queue import BrokerUnavailable, Enqueuer, check_broker
from app.errors import ConfigError, ObjectRefused, StoreUnavailable
from app.jobs import JobRequest, cancel_job
from app.progress.feed import JobFeed
from app.report.fit import FittedTable
from app.settings import Settings
from app.storage.base import local_path
from app.storage.listing import is_stored_source


def _settings(**overrides: Any) -> Settings:
    settings = load_settings(**overrides)
    if not settings.broker_url:
        console.print("[red]Distributed mode needs a broker:[/] set FOLIO_BROKER_URL (Redis).")
        raise typer.Exit(exit_codes.CONFIG)
    return settings


def _enqueuer(settings: Settings) -> Enqueuer:
    enqueuer = Enqueuer(settings)
    try:
        check_broker(enqueuer.app)
    except BrokerUnavailable as exc:
        _broker_down(exc)
    return enqueuer


def _broker_down(exc: BrokerUnavailable) -> None:
    console.print(f"[red]Broker unreachable:[/] {exc}")
    raise typer.Exit(exit_codes.BROKER_DOWN) from exc


def submit(
    source: Annotated[
        str,
        typer.Argument(
            help="A PDF, a folder searched for PDFs, an s3://bucket/prefix/, or a manifest "
            "(.txt, local or s3://) with one s3:// URI per line."
        ),
    ],
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="Output folder recorded on the job; an s3:// prefix: the workers write the "
            "results there when the job ends.",
        ),
    ] = None,
    result_urls: Annotated[
        Path | None,
        typer.Option(
            help="A JSON object of file name (`<document>.md`, `<document>.json`, "
            "`<document>.pdf` with --pdf, `summary.json`, `report.json`) to a pre-signed PUT "
            "URL the workers send it to."
        ),
    ] = None,
    engine: Annotated[str | None, typer.Option(help="Attempt plan.")] = None,
    dpi: Annotated[int | None, typer.Option(help="Rendering resolution.")] = None,
    pdf: SearchablePdf = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow the job's events (pages, ETA) until it ends.")
    ] = False,
    database_url: DatabaseUrl = None,
    broker_url: BrokerUrl = None,
) -> None:
    """Create a job for SOURCE in the database and queue it for `folio worker`s; print its id."""
    settings = _settings(database_url=database_url, broker_url=broker_url, engine=engine)
    if not is_stored_source(source) and not local_path(source).exists():
        console.print(f"[red]No such file or folder:[/] {source}")
        raise typer.Exit(exit_codes.NO_INPUT)
    urls = _result_urls(result_urls)
    enqueuer = _enqueuer(settings)
    db = Database(settings.database_url)
    request = JobRequest(source, out, engine or settings.engine, dpi=dpi, result_urls=urls, pdf=pdf)
    try:
        ingested = distributed.submit_job(settings, db, enqueuer, request)
    except (ObjectRefused, StoreUnavailable) as exc:
        console.print(f"[red]Cannot list {source}:[/] {exc}")
        raise typer.Exit(exit_codes.NO_INPUT) from exc
    except (ConfigError, KeyError) as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(exit_codes.CONFIG) from exc
    except BrokerUnavailable as exc:
        console.print("The job is in the database; `folio recover` queues it once Redis is back.")
        _broker_down(exc)
    if ingested.documents == 0:
        console.print(f"[yellow]No PDF found under {source}[/]")
        raise typer.Exit(exit_codes.NO_INPUT)
    typer.echo(ingested.job_id)
    if wait:
        _wait(db, ingested.job_id, settings.events_poll_s)
        _show(db, ingested.job_id)


def _result_urls(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        urls = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        console.print(f"[red]--result-urls: cannot read {path}:[/] {exc}")
        raise typer.Exit(exit_codes.USAGE) from exc
    if not isinstance(urls, dict) or not all(isinstance(v, str) for v in urls.values()):
        console.print("[red]--result-urls needs a JSON object of file name to URL[/]")
        raise typer.Exit(exit_codes.USAGE)
    return urls


def status(
    job_id: JobId,
    database_url: DatabaseUrl = None,
) -> None:
    """Pages of a job by status."""
    _show(Database(load_settings(database_url=database_url).database_url), job_id)


def cancel(
    job_id: JobId,
    database_url: DatabaseUrl = None,
) -> None:
    """Cancel a job: its open pages fail as `cancelled`, and the workers (or `folio run`,
    `folio serve`) running its pages stop their VLM requests within `cancel_check_s`."""
    db = Database(load_settings(database_url=database_url).database_url)
    try:
        cancelled = cancel_job(db, job_id)
    except KeyError as exc:
        console.print(f"[red]No job {job_id!r} in {db.url}[/]")
        raise typer.Exit(exit_codes.NO_INPUT) from exc
    if not cancelled:
        console.print(f"[yellow]Job {job_id} had ended already[/]")
        raise typer.Exit(exit_codes.USAGE)
    _show(db, job_id)


def worker(
    queues: Annotated[str, typer.Option(help="Queues to consume: cpu, gpu or cpu,gpu.")] = "cpu",
    concurrency: Annotated[
        int | None, typer.Option(help="Pages at once; default worker_threads.")
    ] = None,
    pool: Annotated[
        str, typer.Option(help="Celery pool: threads (one process, many pages) or prefork.")
    ] = "threads",
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "WARNING",
    database_url: DatabaseUrl = None,
    broker_url: BrokerUrl = None,
) -> None:
    """Run a Celery worker on this machine (replaces this process)."""
    settings = _settings(database_url=database_url, broker_url=broker_url)
    kinds = [q.strip() for q in queues.split(",") if q.strip()]
    if not kinds or any(k not in ("cpu", "gpu") for k in kinds):
        console.print(f"[red]--queues takes cpu, gpu or both, not {queues!r}[/]")
        raise typer.Exit(exit_codes.USAGE)
    _enqueuer(settings)
    names = ",".join(f"{settings.queue_prefix}.{k}" for k in kinds)
    argv = [sys.executable, "-m", "workers", "worker", "-Q", names, "-P", pool]
    argv += ["-c", str(concurrency or settings.worker_threads), "-l", loglevel]
    argv += ["-n", f"folio-{'-'.join(kinds)}-{os.getpid()}@%h", "--without-gossip"]
    argv += ["--without-mingle"]
    env = dict(os.environ)
    if database_url:
        env["FOLIO_DATABASE_URL"] = database_url
    if broker_url:
        env["FOLIO_BROKER_URL"] = broker_url
    os.execve(sys.executable, argv, env)


def recover(
    job_id: Annotated[
        str | None, typer.Argument(metavar="JOB", help="Only this job; all open jobs if unset.")
    ] = None,
    database_url: DatabaseUrl = None,
    broker_url: BrokerUrl = None,
) -> None:
    """Queue again every page left open, e.g. after Redis lost its queue; Celery runs those
    jobs from then on."""
    settings = _settings(database_url=database_url, broker_url=broker_url)
    enqueuer = _enqueuer(settings)
    try:
        queued = distributed.recover(Database(settings.database_url), enqueuer, job_id)
    except KeyError as exc:
        console.print(f"[red]No job {job_id!r}[/]")
        raise typer.Exit(exit_codes.NO_INPUT) from exc
    except BrokerUnavailable as exc:
        _broker_down(exc)
    table = Table(title="Recovered")
    table.add_column("job")
    table.add_column("pages queued again", justify="right")
    for jid, n in queued.items():
        table.add_row(jid, str(n))
    Console().print(FittedTable(table, keep_whole=("job",)))
    local = distributed.local_jobs_left(Database(settings.database_url)) if not job_id else 0
    if local:
        console.print(
            f"Left alone: {local} open job(s) run by `folio run` or `folio serve` without a "
            "broker (they resume there); name a JOB to hand one to Celery."
        )


def _wait(db: Database, job_id: str, poll_s: float) -> None:
    """Follow the job's event feed (the one `GET /v1/jobs/{id}/events` streams) to its end."""
    columns = (
        TextColumn("[bold]pages"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    feed = JobFeed(db, job_id)
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("", total=None)
        while not feed.ended:
            for event in feed.poll():
                data = event.data
                eta = data.get("eta_s")
                progress.update(
                    bar,
                    total=data.get("total"),
                    completed=data.get("finished"),
                    description=f"ETA {eta:.0f} s" if eta else "",
                )
            time.sleep(poll_s)


def _show(db: Database, job_id: str) -> None:
    try:
        state = distributed.job_progress(db, job_id)
    except KeyError as exc:
        console.print(f"[red]No job {job_id!r} in {db.url}[/]")
        raise typer.Exit(exit_codes.NO_INPUT) from exc
    table = Table(title=f"Job {job_id}: {state.status}")
    table.add_column("page status")
    table.add_column("pages", justify="right")
    for name, n in sorted(state.pages.items()):
        table.add_row(f"[{STATUS_STYLE.get(name, 'white')}]{name}[/]", str(n))
    table.caption = f"{state.finished} of {state.total} pages finished"
    Console().print(FittedTable(table))
    for endpoint, stop in sorted(state.loop_stops.items()):
        console.print(f"loop stop on {endpoint}: {stop}")
