"""A false alarm must not cost a page its answer (issue 39), end to end over real HTTP.

Folio's real pipeline and VLM engine against the stand-in server (bench/false_alarms), on
SQLite and PostgreSQL, with the generic Markdown profile. The healthy page is a passport
whose machine-readable zone repeats `<` 19 times: the detector as configured here calls
`char_run` on it: the detector is set as it was when the issue found this false alarm
(char_run_min and mrz_fill_run_min 12; the default now waits for 128 `<`, past the zone's
44-character lines), so the test stays on the path it tests; the first test checks the call
happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from app.db import page_path
from app.db.attempts import attempt_row, history
from app.db.engine import Database
from app.db.models import Attempt, Page
from app.domain import AttemptRole, AttemptStatus, EngineResult, Verdict
from app.jobs import JobRequest, create_job, run_job_locally
from app.jobs.results import load_results
from app.pdf import samples
from app.report.build import build_report
from app.report.metrics import FolioMetrics, make_metrics
from app.retry.plan import Limits, NextAttempt, PageFacts, next_attempt
from app.settings import PlanStep, Settings, VlmEndpoint
from app.train.dpo import ExportOptions, export_preferences
from bench.false_alarms.pages import (
    ENDED_COPIES,
    LEDGER,
    LEDGER_ROW,
    PASSPORT,
    drifting_loop,
    ended_loop,
    healthy,
    same_loop,
)
from bench.vllm_standin.scripted import AnswerFor, StandIn, pieces, serving
from tests.api_server import running_api, wait_for_job
from tests.test_api import settings_for as api_settings
from tests.test_api import submit

MAX_TOKENS = 1200  # over the passport's ~500 tokens; a loop runs to it
ANY_PAIR = ExportOptions(include_non_vlm=True)


def settings_for(
    db_url: str, base_url: str, max_tokens: int = MAX_TOKENS, **extra: object
) -> Settings:
    endpoint = VlmEndpoint(
        base_url=base_url,
        model="some-ocr-model",  # no built-in profile names it: the generic `markdown`
        max_tokens=max_tokens,
        transport_retry_s=5,
        engine_plugin=False,
        abort_call=False,
        # asked for, so the requests show which attempts ran with a loop stop (the stand-in
        # itself stops nothing: Folio's detector, closing the stream, does)
        server_repetition_detection=True,
    )
    values: dict[str, object] = {
        "database_url": db_url,
        "engine": "vlm",
        "vlm_endpoints": {"primary": endpoint},
        "detector": {"char_run_min": 12, "mrz_fill_run_min": 12},
        "concurrency": 2,
        "vlm_concurrency": 2,
    }
    return Settings(**(values | extra))  # type: ignore[arg-type]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    root.mkdir()
    pages = [samples.page_text(1), samples.page_text(2)]
    (root / "passports.pdf").write_bytes(samples.born_digital_pdf(pages))
    return root


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[StandIn]:
    answer_for: AnswerFor = request.param
    with serving(answer_for) as stand_in:
        yield stand_in


def run_job(settings: Settings, folder: Path, metrics: FolioMetrics | None = None) -> str:
    db = Database(settings.database_url)
    ingested = create_job(settings, db, JobRequest(folder, None, settings.engine))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids, metrics=metrics)
    return ingested.job_id


def attempts_of(db_url: str, job_id: str) -> dict[int, list[Attempt]]:
    with Database(db_url).session() as session:
        pages = session.scalars(select(Page).where(Page.job_id == job_id)).all()
        rows = session.scalars(select(Attempt).where(Attempt.job_id == job_id).order_by(Attempt.id))
        by_page: dict[int, list[Attempt]] = {p.number: [] for p in pages}
        numbers = {p.id: p.number for p in pages}
        for a in rows:
            by_page[numbers[a.page_id]].append(a)
        return by_page


@pytest.mark.parametrize("server", [healthy], indirect=True)
def test_a_healthy_page_stopped_twice_at_the_same_place_keeps_its_answer(
    db_url: str, server: StandIn, folder: Path, tmp_path: Path
) -> None:
    settings = settings_for(db_url, server.base_url)
    metrics = make_metrics(settings)
    job_id = run_job(settings, folder, metrics)

    results = load_results(Database(db_url), job_id)
    pages = results.documents[0].pages
    assert [(p.status, p.engine, p.step) for p in pages] == [("fallback", "vlm", "retry")] * 2
    assert all(p.text and p.text.strip() == PASSPORT.strip() for p in pages)
    for attempts in attempts_of(db_url, job_id).values():
        assert [(a.step_name, a.status, a.role) for a in attempts] == [
            ("first", "false_alarm", None),
            ("retry", "false_alarm", None),
            ("retry", "ok", "confirm"),
        ]
        first, retry, confirming = attempts
        assert first.verdict_kind == retry.verdict_kind == "char_run"  # the detector called it
        assert first.verdict_onset == retry.verdict_onset > PASSPORT.index("P<UTO")
        assert first.aborted and retry.aborted and not confirming.aborted
        assert confirming.finish_reason == "stop" and confirming.verdict_kind is None
        assert confirming.completion_tokens == len(pieces(PASSPORT)) < MAX_TOKENS
        # its stop let `<` run up to 6x the copies of the cut (the page's count unknown)
        assert confirming.params["confirm_bound"] == 6 * confirming.params["confirm_copies_at_cut"]
        assert confirming.params["confirm_page_holds"] is None

    # The confirming requests repeat the retry's decoding, under the same cap, with no stop.
    stopped = [r for r in server.requests if "repetition_detection" in r]
    unstopped = [r for r in server.requests if "repetition_detection" not in r]
    assert sorted(r["temperature"] for r in stopped) == [0.0, 0.0, 0.2, 0.2]  # first, retry
    assert [(r["temperature"], r["finish"]) for r in unstopped] == [(0.2, "stop")] * 2
    assert all(r["max_tokens"] == MAX_TOKENS for r in server.requests)

    report = build_report(Database(db_url), settings, job_id).report
    assert (report.false_alarm_pages, report.false_alarm_attempts) == (2, 4)
    assert (report.confirming_attempts, report.degenerate_attempts) == (2, 0)
    assert report.degeneration_rate_first_attempt == 0.0 == report.degeneration_rate_final
    assert report.tokens_saved_by_abort == 0 and report.tokens_degenerate == 0
    assert report.tokens_confirming == 2 * len(pieces(PASSPORT))
    assert report.degenerate_pages == []
    found = metrics.registry.get_sample_value(
        "folio_false_alarms_total", {"model": "some-ocr-model"}
    )
    assert found == 4
    # nor does a false alarm become a preference pair that teaches the model against the page
    pairs = export_preferences(settings, Database(db_url), [job_id], tmp_path / "dpo", ANY_PAIR)
    assert (pairs.pairs, sum(pairs.skipped.values())) == (0, 0)


@pytest.mark.parametrize("server", [healthy], indirect=True)
def test_without_the_confirming_attempt_the_page_loses_its_answer(
    sqlite_url: str, server: StandIn, folder: Path, tmp_path: Path
) -> None:
    """Issue 39 as it was: both reads cut, the cap skips the ladder, the text layer answers."""
    settings = settings_for(sqlite_url, server.base_url, confirm_repeated_stops=False)
    job_id = run_job(settings, folder)
    pages = load_results(Database(sqlite_url), job_id).documents[0].pages
    assert [(p.status, p.engine) for p in pages] == [("fallback", "textlayer")] * 2
    assert all(PASSPORT[:40] not in (p.text or "") for p in pages)
    report = build_report(Database(sqlite_url), settings, job_id).report
    assert report.degeneration_rate_first_attempt == 1.0 and report.false_alarm_pages == 0
    assert report.tokens_saved_by_abort > 0 and report.confirming_attempts == 0
    # and each page's cut passport was a candidate "rejected" answer for DPO training
    pairs = export_preferences(settings, Database(sqlite_url), [job_id], tmp_path / "dpo", ANY_PAIR)
    assert pairs.pairs + sum(pairs.skipped.values()) == 2


VLM_ONLY = [
    PlanStep(name=name, engine="vlm", endpoint="primary", temperature=t)
    for name, t in (("t0.1", 0.1), ("t0.2", 0.2), ("t0.5", 0.5))
]


@pytest.mark.parametrize("server", [same_loop], indirect=True)
@pytest.mark.parametrize(
    ("grounding", "page_holds", "expected_bound"), [(True, 0, 2), (False, None, 18)]
)
def test_a_sticky_loop_is_cut_within_its_bound_and_ends_as_degeneration(
    db_url: str,
    server: StandIn,
    folder: Path,
    grounding: bool,
    page_holds: int | None,
    expected_bound: int,
) -> None:
    """The confirming attempt lets the ledger row run to its bound, not to the cap: what the
    page's text layer holds of the row (none: the demo PDF's text) plus 2, or, with grounding
    off, 6x the copies the retry was cut at. The page costs a bounded number of tokens more."""
    plans = {"vlm": VLM_ONLY}
    settings = settings_for(db_url, server.base_url, plans=plans, detector_grounding=grounding)
    job_id = run_job(settings, folder)

    pages = load_results(Database(db_url), job_id).documents[0].pages
    assert [(p.status, p.outcome, p.failure_category) for p in pages] == [
        ("failed", "degenerate", "degenerate")
    ] * 2
    assert all(p.text is None for p in pages)
    row_tokens = len(pieces(LEDGER_ROW))
    for attempts in attempts_of(db_url, job_id).values():
        assert [(a.step_name, a.status, a.role) for a in attempts] == [
            ("t0.1", "degenerate", None),
            ("t0.2", "degenerate", None),
            ("t0.2", "degenerate", "confirm"),
        ]
        confirming = attempts[-1]
        assert confirming.aborted and confirming.verdict_kind is not None
        bound = confirming.params["confirm_bound"]
        assert (confirming.params["confirm_page_holds"], bound) == (page_holds, expected_bound)
        assert confirming.params["confirm_copies_at_cut"] == 3
        # cut past its bound within the detector's own wait (3 copies and a bit): far from
        # the cap
        rows = confirming.output.count(LEDGER_ROW.strip())
        assert bound < rows <= bound + 4
        head = len(pieces(LEDGER.text))
        assert confirming.completion_tokens <= head + (bound + 5) * row_tokens < MAX_TOKENS

    report = build_report(Database(db_url), settings, job_id).report
    assert (report.false_alarm_pages, report.false_alarm_attempts) == (0, 0)
    assert (report.confirming_attempts, report.degenerate_attempts) == (2, 6)
    assert report.tokens_confirming < 2 * MAX_TOKENS  # each page far under its cap
    assert report.degeneration_rate_final == 1.0


@pytest.mark.parametrize("server", [ended_loop], indirect=True)
def test_a_loop_that_ends_before_the_cap_is_still_degeneration(
    db_url: str, server: StandIn, folder: Path
) -> None:
    """Issue 50: the ledger row 60 times, then EOS, on every read. Before, the confirming
    attempt ran with no stop, ended, and its 60 rows became the page's answer."""
    cap = 4096  # the generic profile's: the 60 rows end before it
    assert len(pieces(LEDGER.text + LEDGER_ROW * ENDED_COPIES)) < cap
    settings = settings_for(db_url, server.base_url, max_tokens=cap)
    job_id = run_job(settings, folder)

    pages = load_results(Database(db_url), job_id).documents[0].pages
    assert [(p.status, p.engine) for p in pages] == [("fallback", "textlayer")] * 2
    assert all(LEDGER_ROW.strip() not in (p.text or "") for p in pages)
    for attempts in attempts_of(db_url, job_id).values():
        assert [(a.step_name, a.status, a.role) for a in attempts] == [
            ("first", "degenerate", None),
            ("retry", "degenerate", None),
            ("retry", "degenerate", "confirm"),
            ("textlayer", "ok", None),
        ]
    report = build_report(Database(db_url), settings, job_id).report
    assert (report.false_alarm_pages, report.confirming_attempts) == (0, 2)
    assert report.degeneration_rate_first_attempt == 1.0


@pytest.mark.parametrize("server", [drifting_loop], indirect=True)
def test_a_loop_that_moves_on_the_retry_gets_no_confirming_attempt(
    sqlite_url: str, server: StandIn, folder: Path
) -> None:
    settings = settings_for(sqlite_url, server.base_url)
    job_id = run_job(settings, folder)
    pages = load_results(Database(sqlite_url), job_id).documents[0].pages
    assert [(p.status, p.engine) for p in pages] == [("fallback", "textlayer")] * 2
    for attempts in attempts_of(sqlite_url, job_id).values():
        assert [(a.step_name, a.status, a.role) for a in attempts] == [
            ("first", "degenerate", None),
            ("retry", "degenerate", None),
            ("textlayer", "ok", None),
        ]
    assert build_report(Database(sqlite_url), settings, job_id).report.confirming_attempts == 0


def test_a_redelivered_page_reads_its_stops_and_confirming_attempt_back(
    sqlite_url: str, folder: Path
) -> None:
    """A worker that dies after the two stops: the page's history, read back from the
    database, still earns the confirming attempt, and only one."""
    settings = settings_for(sqlite_url, "http://127.0.0.1:9/v1")
    db = Database(sqlite_url)
    page_id = create_job(settings, db, JobRequest(folder, None, "vlm")).page_ids[0]
    plan = settings.plan("vlm")
    cut_at = PASSPORT.index("<<<<") + 12
    now = datetime.now(UTC)

    def stopped(text: str) -> EngineResult:
        verdict = Verdict("char_run", 1, PASSPORT.index("<<<<"))
        return EngineResult(text, AttemptStatus.DEGENERATE, now, now, verdict=verdict, aborted=True)

    facts = PageFacts(text_layer_usable=True, endpoints=frozenset({"primary"}))
    limits = Limits(8, 32_000, 1, confirm_repeated_stops=True)
    with db.transaction() as conn:  # claimed and let go at once (a lease that has run out)
        claimed = page_path.claim(conn, page_id, "recorder", lease_s=-1)
        assert isinstance(claimed, page_path.ClaimedPage)
        work = claimed.work
    for index, text in ((0, PASSPORT[:cut_at]), (1, PASSPORT[: cut_at + 2])):
        with db.transaction() as conn:
            page_path.record_attempt(conn, attempt_row(work, index, plan[index], stopped(text)))
    with db.session() as session:
        past = history(session, page_id)
    assert [a.stop and a.stop.kind for a in past] == ["char_run", "char_run"]
    assert next_attempt(plan, past, facts, limits) == NextAttempt(1, confirming=True)

    looped = stopped(PASSPORT[:cut_at] + "<" * 3000)
    looped.aborted, looped.finish_reason, looped.role = False, "length", AttemptRole.CONFIRM
    with db.transaction() as conn:
        page_path.record_attempt(conn, attempt_row(work, 1, plan[1], looped))
    with db.session() as session:
        past = history(session, page_id)
    assert [a.confirming for a in past] == [False, False, True] and past[2].stop is None
    textlayer = [step.name for step in plan].index("textlayer")
    assert next_attempt(plan, past, facts, limits) == NextAttempt(textlayer)


@pytest.mark.parametrize("server", [healthy], indirect=True)
def test_the_api_shows_the_false_alarms_and_the_kept_answer(
    sqlite_url: str, server: StandIn, tmp_path: Path
) -> None:
    vlm = settings_for(sqlite_url, server.base_url)
    settings = api_settings(
        sqlite_url,
        tmp_path,
        engine="vlm",
        vlm_endpoints=vlm.vlm_endpoints,
        detector=vlm.detector,
    )
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        pdf = samples.born_digital_pdf([samples.page_text(1)])
        job_id = submit(client, [("passport.pdf", pdf)]).json()["id"]  # type: ignore[attr-defined]
        assert wait_for_job(client, job_id)["status"] == "done"
        [page] = client.get(f"/v1/jobs/{job_id}/pages").json()["items"]
        detail = client.get(f"/v1/jobs/{job_id}/pages/{page['id']}").json()
        report = client.get(f"/v1/jobs/{job_id}/report").json()
    assert (page["outcome"], detail["text"].strip()) == ("fallback", PASSPORT.strip())
    assert [(a["status"], a["role"]) for a in detail["attempts"]] == [
        ("false_alarm", None),
        ("false_alarm", None),
        ("ok", "confirm"),
    ]
    assert (report["false_alarm_pages"], report["degenerate_attempts"]) == (1, 0)
