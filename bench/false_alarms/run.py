"""`python -m bench false-alarms`: what a confirming attempt costs, and what it saves.

Folio's real pipeline (SQLite, the embedded executor, the built-in `vlm` plan: the generic
profile's first attempt and Folio's retry, then the text layer) and VLM engine, over HTTP to the
stand-in for vLLM in its scripted mode (`bench.vllm_standin.scripted`), the generic profile's
cap of 4,096 tokens. Three pages, each in two arms (the confirming attempt off, as before
issue 39, and on):

- `false alarm`: a healthy passport page whose `<` fill trips `char_run` at the same place
  on every read (`pages.PASSPORT`);
- `loop, same place`: a real loop on a ledger row from the same place whatever the decoding
  (a sticky loop: the confirming attempt lets the row run to its bound, then cuts it);
- `loop that ends`: the same row 60 times from the same place, then EOS before the cap (a
  loop that ends is still degeneration);
- `loop, moved`: a real loop whose place and row move with the temperature (no confirming
  attempt; the repeated-loop cap skips the rest of the ladder as before);
- `loop, gone on retry`: the ledger loops on the greedy first read only, the retry reads it:
  what a loop that does not come back costs, the yardstick of a sticky loop's cost
  (`sticky_over_gone`: issue 51 asks for at most 2).

Per page: whose text the page ends with, attempts, tokens the VLM generated (stand-in
tokens: pieces of at most 4 characters), the confirming attempt's tokens, and the report's
degeneration, false-alarm and "saved by abort" figures. Counts, not timings: the same on any
machine.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from app.db.engine import Database, dispose_engines
from app.jobs import JobRequest, create_job, run_job_locally
from app.jobs.results import load_results
from app.pdf import samples
from app.report.build import build_report
from app.settings import Settings, VlmEndpoint
from bench.environment import machine_info, write_results
from bench.false_alarms.bound import bound_table, run_bound
from bench.false_alarms.pages import (
    PASSPORT,
    drifting_loop,
    ended_loop,
    healthy,
    loop_once,
    same_loop,
)
from bench.false_alarms.resume import resume_table, run_resume
from bench.vllm_standin.scripted import AnswerFor, serving

MAX_TOKENS = 4096  # the generic `markdown` profile's cap
SCENARIOS: dict[str, AnswerFor] = {
    "false alarm": healthy,
    "loop, same place": same_loop,
    "loop that ends": ended_loop,
    "loop, moved": drifting_loop,
    "loop, gone on retry": loop_once,
}


def run_arm(
    answer_for: AnswerFor, confirm: bool, pages: int, work: Path, grounding: bool = True
) -> dict[str, Any]:
    """One job of `pages` identical pages; the figures a user would read of it."""
    folder = work / "in"
    folder.mkdir(parents=True)
    (folder / "d.pdf").write_bytes(samples.born_digital_pdf([samples.page_text(1)] * pages))
    with serving(answer_for) as server:
        endpoint = VlmEndpoint(
            base_url=server.base_url,
            model="some-ocr-model",
            max_tokens=MAX_TOKENS,
            engine_plugin=False,
            abort_call=False,
            server_repetition_detection=True,  # exact token counts in the stream
        )
        settings = Settings(
            database_url=f"sqlite:///{work / 'folio.db'}",
            engine="vlm",
            vlm_endpoints={"primary": endpoint},
            detector={"char_run_min": 12, "mrz_fill_run_min": 12},
            confirm_repeated_stops=confirm,
            detector_grounding=grounding,
            concurrency=2,
            vlm_concurrency=2,
        )
        db = Database(settings.database_url)
        ingested = create_job(settings, db, JobRequest(folder, None, "vlm"))
        run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    results = load_results(db, ingested.job_id).documents[0].pages
    report = build_report(db, settings, ingested.job_id).report
    dispose_engines()
    vlm_tokens = sum(m.tokens_generated for m in report.per_model if m.engine == "vlm")
    return {
        "pages": pages,
        "model_answer_kept": sum(p.engine == "vlm" for p in results),
        "answer_is_the_passport": sum((p.text or "").strip() == PASSPORT.strip() for p in results),
        "ended_on": sorted({p.engine or p.outcome for p in results}),
        "attempts_per_page": report.attempts_total / pages,
        "vlm_tokens_per_page": vlm_tokens / pages,
        "confirming_tokens_per_page": report.tokens_confirming / pages,
        "degeneration_rate_first_attempt": report.degeneration_rate_first_attempt,
        "false_alarm_pages": report.false_alarm_pages,
        "tokens_saved_by_abort_per_page": report.tokens_saved_by_abort / pages,
    }


def run(pages: int) -> dict[str, Any]:
    arms: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="folio-false-alarms-") as tmp:
        for name, answer_for in SCENARIOS.items():
            for confirm in (False, True):
                work = Path(tmp) / f"{name}-{confirm}".replace(" ", "_").replace(",", "")
                arms[f"{name}, confirm {'on' if confirm else 'off'}"] = run_arm(
                    answer_for, confirm, pages, work
                )
        # The demo PDF's text layer holds none of the ledger's rows: grounding bounds the
        # sticky loop's confirming attempt at 0 + 2 copies; without it, the bound is the
        # multiple of the copies at the cut.
        arms["loop, same place, confirm on, grounding off"] = run_arm(
            same_loop, True, pages, Path(tmp) / "sticky-ungrounded", grounding=False
        )
    extra = {
        name: arms[f"{name}, confirm on"]["vlm_tokens_per_page"]
        - arms[f"{name}, confirm off"]["vlm_tokens_per_page"]
        for name in SCENARIOS
    }
    gone = arms["loop, gone on retry, confirm on"]["vlm_tokens_per_page"]
    return {
        "max_tokens": MAX_TOKENS,
        "arms": arms,
        "extra_vlm_tokens_per_page": extra,
        "sticky_over_gone": {
            arm: round(arms[arm]["vlm_tokens_per_page"] / gone, 3)
            for arm in (
                "loop, same place, confirm on",
                "loop, same place, confirm on, grounding off",
            )
        },
    }


def results_table(report: dict[str, Any]) -> Table:
    table = Table(
        title=f"False alarms and real loops, confirming attempt off vs on (cap {MAX_TOKENS})"
    )
    columns = (
        "arm",
        "answer kept",
        "ended on",
        "attempts/page",
        "VLM tokens/page",
        "confirming/page",
        "degenerate 1st",
        "false-alarm pages",
        "saved by abort/page",
    )
    for column in columns:
        table.add_column(column, justify="left" if column in ("arm", "ended on") else "right")
    for name, arm in report["arms"].items():
        table.add_row(
            name,
            f"{arm['model_answer_kept']}/{arm['pages']}",
            ", ".join(arm["ended_on"]),
            f"{arm['attempts_per_page']:.1f}",
            f"{arm['vlm_tokens_per_page']:,.0f}",
            f"{arm['confirming_tokens_per_page']:,.0f}",
            f"{arm['degeneration_rate_first_attempt']:.0%}",
            str(arm["false_alarm_pages"]),
            f"{arm['tokens_saved_by_abort_per_page']:,.0f}",
        )
    return table


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench false-alarms", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 pages an arm instead of 6")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="a retry resuming past the loop against a full re-read, on the vLLM CPU server "
        "(resume.py)",
    )
    parser.add_argument(
        "--bound",
        action="store_true",
        help="the confirming attempt's bound on real text instead (bound.py; no server)",
    )
    args = parser.parse_args(argv)
    console = Console(width=170)
    if args.resume:
        resumed = run_resume(2 if args.quick else 4)
        resumed["machine"] = machine_info()
        console.print(resume_table(resumed))
        console.print(f"Results written to {write_results('resume', resumed)}")
        return resumed
    if args.bound:
        bound = run_bound()
        bound["machine"] = machine_info()
        console.print(bound_table(bound))
        console.print(f"Results written to {write_results('confirm_bound', bound)}")
        return bound
    report = run(2 if args.quick else 6)
    report["machine"] = machine_info()
    console.print(results_table(report))
    for name, tokens in report["extra_vlm_tokens_per_page"].items():
        console.print(
            f"extra VLM tokens per page with the confirming attempt, {name}: {tokens:,.0f}"
        )
    for arm, ratio in report["sticky_over_gone"].items():
        console.print(f"{arm} over a loop that does not come back, VLM tokens: {ratio:.2f}x")
    console.print(f"Results written to {write_results('false_alarms', report)}")
    return report


if __name__ == "__main__":
    main()
