"""Page outcomes a client can act on, and the cap on attempts that repeat a page's loop."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from app.db.engine import Database
from app.db.models import Attempt, Page
from app.domain import AttemptStatus, EngineResult, Outcome, PageInput, Verdict, page_outcome
from app.engines.registry import EngineSet
from app.jobs import JobRequest, create_job, run_job_locally
from app.jobs.results import load_results, summary_of
from app.pdf import samples
from app.settings import PlanStep, Settings, VlmEndpoint
from tests.api_server import Api, running_api, wait_for_job
from tests.test_api import settings_for, submit

TEXT = samples.page_text(3)


@pytest.mark.parametrize(
    ("status", "category", "expected"),
    [
        ("succeeded", None, (Outcome.OK, None)),
        ("fallback", None, (Outcome.FALLBACK, None)),
        ("failed", "degenerate", (Outcome.DEGENERATE, False)),
        ("failed", "transport", (Outcome.FAILED, True)),
        ("failed", "cancelled", (Outcome.FAILED, True)),
        ("failed", "internal", (Outcome.FAILED, True)),
        ("failed", "render", (Outcome.FAILED, False)),
        ("failed", "no_engine", (Outcome.FAILED, False)),
        ("running", None, (Outcome.RUNNING, None)),
    ],
)
def test_page_outcome_table(status: str, category: str | None, expected: object) -> None:
    assert page_outcome(status, category) == expected


class LoopingVlm:
    """A real Engine implementation whose every attempt loops the same way, as a model that
    loops deterministically on a page does."""

    name = "vlm"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        self.calls.append(step.name)
        now = datetime.now(UTC)
        verdict = Verdict("repeat", period=12, onset=40)
        return EngineResult("ab " * 300, AttemptStatus.DEGENERATE, now, now, verdict=verdict)

    def close(self) -> None:
        return None


def vlm_settings(db_url: str, **extra: object) -> Settings:
    # olmOCR-2's profile: the built-in `vlm` plan runs its three-rung temperature ladder
    endpoint = VlmEndpoint(base_url="http://127.0.0.1:9/v1", model="m", profile="olmocr2")
    values: dict[str, object] = {
        "database_url": db_url,
        "engine": "vlm",
        "vlm_endpoints": {"primary": endpoint, "fallback": endpoint},
    }
    return Settings(**(values | extra))  # type: ignore[arg-type]


@pytest.fixture
def looping(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopingVlm]:
    vlm = LoopingVlm()
    build = EngineSet.for_step
    monkeypatch.setattr(
        EngineSet, "for_step", lambda self, step: vlm if step.engine == "vlm" else build(self, step)
    )
    yield vlm


@pytest.mark.parametrize(("cap", "vlm_steps"), [(1, 2), (None, 4)])
def test_a_repeated_loop_stops_the_vlm_steps(
    sqlite_url: str, tmp_path: Path, looping: LoopingVlm, cap: int | None, vlm_steps: int
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.pdf").write_bytes(samples.born_digital_pdf([TEXT]))
    settings = vlm_settings(sqlite_url, repeat_loop_cap=cap)
    db = Database(sqlite_url)
    ingested = create_job(settings, db, JobRequest(tmp_path / "in", None, "vlm"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    assert len(looping.calls) == vlm_steps
    with db.session() as session:
        engines = session.scalars(select(Attempt.engine).order_by(Attempt.id)).all()
        page = session.scalars(select(Page)).one()
    assert engines == ["vlm"] * vlm_steps + ["textlayer"]
    assert page_outcome(page.status, page.failure_category) == (Outcome.FALLBACK, None)


def test_every_attempt_looping_is_degenerate_never_ok(
    sqlite_url: str, tmp_path: Path, looping: LoopingVlm
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.pdf").write_bytes(samples.scanned_pdf([TEXT]))
    settings = vlm_settings(sqlite_url, plans={"vlm": Settings().plan("vlm")[:3]})
    db = Database(sqlite_url)
    ingested = create_job(settings, db, JobRequest(tmp_path / "in", None, "vlm"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    assert looping.calls == ["t0.1", "t0.2"]  # the cap (1) spared the rest of the ladder
    page = load_results(db, ingested.job_id).documents[0].pages[0]
    assert (page.outcome, page.retryable) == ("degenerate", False)
    assert page.failure_category == "degenerate"
    assert "the same loop came back 1 time" in (page.error or "")
    failed = summary_of(load_results(db, ingested.job_id))["documents"][0]["failed_pages"]
    assert failed == [
        {
            "page": 1,
            "outcome": "degenerate",
            "category": "degenerate",
            "retryable": False,
            "error": page.error,
        }
    ]


@pytest.fixture
def api(db_url: str, tmp_path: Path) -> Iterator[Api]:
    with running_api(settings_for(db_url, tmp_path)) as server:
        yield server


def test_a_partial_document_lists_its_failed_pages(api: Api) -> None:
    client = api.client(api.key("alice"))
    two_pages = samples.born_digital_pdf([TEXT, ""])  # the second has no text layer
    job_id = submit(client, [("a.pdf", two_pages)]).json()["id"]  # type: ignore[attr-defined]
    assert wait_for_job(client, job_id)["status"] == "done"
    [document] = client.get(f"/v1/jobs/{job_id}/documents").json()
    assert document["status"] == "partial"
    [failed] = document["failed_pages"]
    assert (failed["number"], failed["outcome"]) == (2, "failed")
    assert (failed["failure_category"], failed["retryable"]) == ("no_engine", False)
    pages = client.get(f"/v1/jobs/{job_id}/pages").json()["items"]
    assert [(p["outcome"], p["retryable"]) for p in pages] == [("ok", None), ("failed", False)]
