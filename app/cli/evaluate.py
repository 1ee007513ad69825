"""`folio eval`: the same pages through several plans or models, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from app.cli import exit_codes
from app.cli.options import DatabaseUrl, load_settings
from app.db.engine import Database
from app.errors import ConfigError, DocumentError
from app.evaluate.arms import Arm, parse_arm
from app.evaluate.render import eval_html, eval_json, eval_table
from app.evaluate.run import EvalRequest, evaluate
from app.evaluate.strategies import with_strategies

console = Console(stderr=True)


def eval_command(
    source: Annotated[
        Path, typer.Argument(metavar="SOURCE", help="A PDF, or a folder searched for PDFs.")
    ],
    arm: Annotated[
        list[str] | None,
        typer.Option(
            "--arm",
            "-a",
            help="LABEL=PLAN or LABEL=PLAN@ENDPOINT (the plan's VLM steps sent to ENDPOINT). "
            "Two or more to compare.",
        ),
    ] = None,
    strategies: Annotated[
        str | None,
        typer.Option(
            help="Also compare retry strategies on this endpoint: greedy only, repetition "
            "penalty, olmOCR's temperature ladder, the n-gram guard (needs Folio's vLLM plugin).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Folder for eval.json and eval.html; the same command again resumes the "
            "evaluation there (each arm's finished pages are kept).",
        ),
    ] = Path("eval-out"),
    pages: Annotated[
        Path | None,
        typer.Option(
            help="Only these pages: a JSON list of {document, page} (held_out_pages.json)."
        ),
    ] = None,
    database_url: DatabaseUrl = None,
    truth: Annotated[
        Path | None,
        typer.Option(help="Ground truth folder: DOC.pN.md (or DOC.md for a one-page document)."),
    ] = None,
) -> None:
    """Compare plans or models on the same pages: degeneration beside quality, tokens and cost."""
    settings = load_settings(database_url=database_url)
    try:
        arms: list[Arm] = [parse_arm(spec) for spec in arm or []]
        if strategies:
            settings, strategy_arms = with_strategies(settings, strategies)
            arms += strategy_arms
        if not arms:
            raise ConfigError("nothing to compare: give --arm (two or more) or --strategies")
        if not source.exists():
            raise DocumentError("input", f"no such file or folder: {source}")
        out.mkdir(parents=True, exist_ok=True)
        request = EvalRequest(source, arms, out, pages, truth)
        evaluation = evaluate(
            settings,
            Database(settings.database_url),
            request,
            on_arm=lambda a, n: console.print(f"arm [bold]{a.label}[/]: {n} pages to read"),
        )
    except ConfigError as exc:
        console.print(f"[red]{exc}[/]", soft_wrap=True)
        raise typer.Exit(exit_codes.CONFIG) from exc
    except DocumentError as exc:
        console.print(f"[red]{exc}[/]", soft_wrap=True)
        raise typer.Exit(exit_codes.NO_INPUT) from exc
    (out / "eval.json").write_text(eval_json(evaluation), encoding="utf-8")
    (out / "eval.html").write_text(eval_html(evaluation), encoding="utf-8")
    Console().print(eval_table(evaluation))
    console.print(f"Written: {out / 'eval.json'}, {out / 'eval.html'}")
