"""What every command shares: loading settings, and the options that mean the same everywhere."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from app.cli import exit_codes
from app.settings import Settings

console = Console(stderr=True)

# Every command that reads the database takes --database-url, every one that queues --broker-url.
DatabaseUrl = Annotated[
    str | None, typer.Option(help="Database URL; overrides FOLIO_DATABASE_URL.", show_default=False)
]
BrokerUrl = Annotated[
    str | None, typer.Option(help="Broker URL; overrides FOLIO_BROKER_URL.", show_default=False)
]
# `folio run` and `folio submit`: a searchable PDF per document, or the settings' default.
SearchablePdf = Annotated[
    bool | None,
    typer.Option(
        "--pdf/--no-pdf",
        help="Also write each document as a searchable PDF (`<document>.pdf`: the original "
        "with the kept text as an invisible layer); default: FOLIO_SEARCHABLE_PDF.",
        show_default=False,
    ),
]
JobId = Annotated[
    str, typer.Argument(metavar="JOB", help="Job id, as `folio run` or `folio submit` prints it.")
]


def load_settings(**overrides: Any) -> Settings:
    """Settings from env/folio.toml, with the command line's explicit values on top."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        console.print(f"[red]Invalid settings:[/] {exc}")
        raise typer.Exit(exit_codes.CONFIG) from exc
