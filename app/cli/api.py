"""`folio serve` and `folio apikey`: run the REST API and manage who may call it."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from app.cli import exit_codes
from app.cli.options import DatabaseUrl, console, load_settings
from app.db import keys
from app.db.engine import Database
from app.report.fit import FittedTable
from app.settings import Settings

apikey_app = typer.Typer(help="API keys for the REST API.", no_args_is_help=True)


def _db(database_url: str | None) -> Database:
    return Database(load_settings(database_url=database_url).database_url)


@apikey_app.command("create")
def apikey_create(
    name: Annotated[str, typer.Argument(help="A label for who uses the key.")],
    database_url: DatabaseUrl = None,
) -> None:
    """Create a key and print its token once; only its hash is stored."""
    with _db(database_url).session() as session:
        try:
            info, token = keys.create_key(session, name)
        except ValueError as exc:
            console.print(f"[red]{exc}[/]")
            raise typer.Exit(exit_codes.USAGE) from exc
    console.print(
        f"API key [bold]{info.name}[/] (id {info.id}); keep the token, it is not shown again:"
    )
    typer.echo(token)


@apikey_app.command("revoke")
def apikey_revoke(
    key: Annotated[str, typer.Argument(metavar="ID|NAME", help="Id or name of the key.")],
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke a key; requests with it get 401 from now on."""
    with _db(database_url).session() as session:
        try:
            info = keys.revoke_key(session, key)
        except KeyError as exc:
            console.print(f"[red]No API key {key!r}[/]")
            raise typer.Exit(exit_codes.NO_INPUT) from exc
    console.print(f"Revoked API key [bold]{info.name}[/] (id {info.id})")


@apikey_app.command("rotate")
def apikey_rotate(
    key: Annotated[str, typer.Argument(metavar="ID|NAME", help="Id or name of the key.")],
    grace_h: Annotated[
        float, typer.Option(min=0, help="Hours the old token keeps working beside the new one.")
    ] = 24.0,
    database_url: DatabaseUrl = None,
) -> None:
    """Give a key a new token and print it once: the same key, so its jobs, webhook and
    secret stay its own; the old token works for --grace-h more hours, then never again."""
    with _db(database_url).session() as session:
        try:
            info, token = keys.rotate_token(session, key, timedelta(hours=grace_h))
        except KeyError as exc:
            console.print(f"[red]No API key {key!r}[/]")
            raise typer.Exit(exit_codes.NO_INPUT) from exc
        except ValueError as exc:
            console.print(f"[red]{exc}[/]")
            raise typer.Exit(exit_codes.USAGE) from exc
    console.print(
        f"New token for API key [bold]{info.name}[/] (id {info.id}); the old one works "
        f"{grace_h:g} h more. Keep it, it is not shown again:"
    )
    typer.echo(token)


@apikey_app.command("list")
def apikey_list(database_url: DatabaseUrl = None) -> None:
    """Every key, live or revoked (never the tokens)."""
    with _db(database_url).session() as session:
        infos = keys.list_keys(session)
    table = Table("id", "name", "created", "revoked")
    for info in infos:
        revoked = info.revoked_at.isoformat(timespec="seconds") if info.revoked_at else ""
        table.add_row(
            str(info.id), info.name, info.created_at.isoformat(timespec="seconds"), revoked
        )
    Console().print(FittedTable(table, drop_order=("created",)))


def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    database_url: DatabaseUrl = None,
) -> None:
    """Run the REST API (OpenAPI docs at /docs) with uvicorn."""
    import uvicorn

    from app.api.app import create_app

    settings: Settings = load_settings(database_url=database_url)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info")
