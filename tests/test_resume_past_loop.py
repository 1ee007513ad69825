"""A retry that resumes past the loop (issue 51 part 5), end to end over real HTTP.

Folio's pipeline and VLM engine against the false-alarm bench's stand-in server: the ledger
loops on the greedy first read; the retry, whose step asks to resume, sends the text before
the loop as the assistant's last turn with vLLM's `continue_final_message`, and the stand-in
writes the rest of the healthy ledger after it, as a model continuing its own text would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.db.engine import Database
from app.domain import AttemptStatus
from app.jobs.results import load_results
from app.pdf import samples
from app.retry.plan import LoopStop, PastAttempt, resume_prefix
from app.settings import PlanStep
from bench.false_alarms.pages import LEDGER, LEDGER_HEALTHY, loop_once
from bench.vllm_standin.scripted import StandIn, pieces, serving
from tests.test_false_alarms import attempts_of, run_job, settings_for

S = AttemptStatus


def steps(resume: bool) -> list[PlanStep]:
    first = PlanStep(name="first", engine="vlm", endpoint="primary", temperature=0.0)
    retry = PlanStep(
        name="retry", engine="vlm", endpoint="primary", temperature=0.2, resume_after_loop=resume
    )
    return [first, retry]


@pytest.fixture
def server() -> Iterator[StandIn]:
    with serving(loop_once) as stand_in:
        yield stand_in


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    root.mkdir()
    (root / "ledger.pdf").write_bytes(samples.born_digital_pdf([samples.page_text(1)]))
    return root


def cut(kind: str, onset: int, text: str) -> list[PastAttempt]:
    return [PastAttempt(0, S.DEGENERATE, 100, None, LoopStop(kind, onset, text))]


@pytest.mark.parametrize(
    ("history", "kept"),
    [
        ([], None),
        ([PastAttempt(0, S.DEGENERATE, 100)], None),  # no stop: ran to its cap
        (cut("line", 5, "# T\n\nrow 1\nrow 1\nrow 1"), "# T\n\n"),
        (cut("line", 8, "# T\n\nrow 1\nrow 1\nrow 1"), "# T\n\n"),  # back to the line start
        (cut("line", 0, "ab\nab\nab"), None),  # nothing before the loop
        (cut("char_run", 12, "Name: P<UTO<<<<<<"), "Name: P<UTO<"),  # one line: kept as cut
    ],
)
def test_the_kept_text_ends_before_the_loop_at_a_line_start(
    history: list[PastAttempt], kept: str | None
) -> None:
    assert resume_prefix(history) == kept


def test_a_resumed_retry_keeps_the_text_before_the_loop_and_writes_only_the_rest(
    sqlite_url: str, server: StandIn, folder: Path
) -> None:
    settings = settings_for(sqlite_url, server.base_url, plans={"vlm": steps(resume=True)})
    job_id = run_job(settings, folder)

    [page] = load_results(Database(sqlite_url), job_id).documents[0].pages
    assert (page.status, page.engine, page.step) == ("fallback", "vlm", "retry")
    assert page.text is not None and page.text.strip() == LEDGER_HEALTHY.strip()
    [(first, retry)] = attempts_of(sqlite_url, job_id).values()
    assert (first.status, retry.status) == ("degenerate", "ok")
    kept = retry.params["resumed_from_chars"]
    assert 0 < kept <= first.verdict_onset and LEDGER.text.startswith(LEDGER_HEALTHY[:kept])
    # the retry generated only what came after the kept text
    assert retry.completion_tokens == len(pieces(LEDGER_HEALTHY[kept:]))
    resumed = server.requests[-1]
    assert resumed["continue_final_message"] is True and resumed["add_generation_prompt"] is False
    assert resumed["temperature"] == 0.2  # the retry's decoding, on the continuation only


def test_without_resume_the_retry_reads_the_whole_page_again(
    sqlite_url: str, server: StandIn, folder: Path
) -> None:
    settings = settings_for(sqlite_url, server.base_url, plans={"vlm": steps(resume=False)})
    job_id = run_job(settings, folder)

    [page] = load_results(Database(sqlite_url), job_id).documents[0].pages
    assert page.text is not None and page.text.strip() == LEDGER_HEALTHY.strip()
    [(_, retry)] = attempts_of(sqlite_url, job_id).values()
    assert retry.completion_tokens == len(pieces(LEDGER_HEALTHY))
    assert "resumed_from_chars" not in retry.params
    assert "continue_final_message" not in server.requests[-1]
