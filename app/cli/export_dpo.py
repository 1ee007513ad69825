"""`folio export-dpo`: preference pairs from finished jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from app.cli.options import DatabaseUrl, load_settings
from app.db.engine import Database
from app.report.fit import FittedTable
from app.train.dpo import ExportOptions, export_preferences


def export_dpo(
    job_ids: Annotated[list[str], typer.Argument(metavar="JOB", help="One or more job ids.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for train.jsonl and images/.")],
    include_non_vlm: Annotated[
        bool,
        typer.Option(
            "--include-non-vlm", help="Also pair with answers from Tesseract or the text layer."
        ),
    ] = False,
    loop_periods: Annotated[
        int, typer.Option(help="Loop periods kept in a rejected output after the loop starts.")
    ] = 8,
    min_chosen_chars: Annotated[int, typer.Option(help="Shortest chosen answer kept.")] = 1,
    min_textlayer_agreement: Annotated[
        float, typer.Option(help="Word F1 a chosen answer needs against a usable text layer.")
    ] = 0.5,
    truth: Annotated[
        Path | None,
        typer.Option(
            help="Ground truth folder (DOC.pN.md, as for folio eval): chosen where present, "
            "else the healthy retry."
        ),
    ] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Write DPO preference pairs (TRL vision format) from the jobs' degenerate pages."""
    settings = load_settings(database_url=database_url)
    options = ExportOptions(
        include_non_vlm=include_non_vlm,
        loop_periods_kept=loop_periods,
        min_chosen_chars=min_chosen_chars,
        min_textlayer_agreement=min_textlayer_agreement,
        truth_dir=truth,
    )
    summary = export_preferences(settings, Database(settings.database_url), job_ids, out, options)
    table = Table(title=f"DPO export to {out}")
    table.add_column("outcome")
    table.add_column("pages", justify="right")
    table.add_row("[green]pairs written[/]", str(summary.pairs))
    for reason, count in summary.skipped.most_common():
        table.add_row(f"skipped: {reason}", str(count))
    Console().print(FittedTable(table))
