"""`folio scan`: parse the arguments, delegate to `app.evaluate.scan`, print the verdicts."""

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from app.evaluate.scan import (
    ScanInputError,
    ScanRecord,
    degeneration_rate,
    record_as_json,
    scan_paths,
)
from app.report.fit import FittedTable


def scan(
    paths: list[Path] = typer.Argument(
        ...,
        metavar="PATH",
        help="Text outputs: .txt/.md files (one sample each), .jsonl files or folders.",
    ),
    field: str = typer.Option("text", help="JSONL field holding the output text."),
    id_field: str = typer.Option("id", help="JSONL field holding the sample id."),
    json_out: bool = typer.Option(
        False, "--json", help="Print one JSON object per sample instead of a table."
    ),
) -> None:
    """Score outputs for degeneration (repetition loops) and report the verdicts."""
    try:
        records = scan_paths(paths, field=field, id_field=id_field)
    except (ScanInputError, OSError, UnicodeDecodeError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=2) from error
    if json_out:
        for record in records:
            typer.echo(json.dumps(record_as_json(record), ensure_ascii=False))
    else:
        _print_table(records)


def _print_table(records: list[ScanRecord]) -> None:
    table = Table(title="Degeneration scan")
    table.add_column("id", overflow="fold")
    for column in ("degenerate", "kind", "period", "onset", "coverage", "reason"):
        table.add_column(column, justify="right" if column in ("period", "onset") else "left")
    for record in records:
        score = record.score
        table.add_row(
            record.id,
            "yes" if score.degenerate else "no",
            score.kind or "",
            "" if score.period is None else str(score.period),
            "" if score.onset is None else str(score.onset),
            f"{score.coverage:.2f}",
            score.reason or "",
        )
    console = Console()
    console.print(FittedTable(table, drop_order=("onset", "coverage", "period", "kind")))
    degenerate = sum(record.score.degenerate for record in records)
    console.print(
        f"Degeneration rate: {degenerate}/{len(records)} ({degeneration_rate(records):.1%})"
    )
