"""A folder of generated PDFs end to end on the embedded default, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.db import page_path
from app.db.engine import Database
from app.db.models import Attempt, Document, Page
from app.domain import AttemptStatus, EngineResult, PageInput, PageStatus
from app.engines.registry import EngineSet
from app.jobs import JobRequest, create_job, run_job_locally
from app.jobs.results import load_results, summary_of, write_outputs
from app.pdf import samples
from app.settings import PlanStep, Settings
from tests.textmetrics import cer

DIGITAL = [samples.page_text(n) for n in (1, 2)]
SCANNED = [samples.page_text(4, paragraphs=2)]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    (root / "digital.pdf").write_bytes(samples.born_digital_pdf(DIGITAL))
    (root / "sub" / "scan.PDF").write_bytes(samples.scanned_pdf(SCANNED))
    (root / "mixed.pdf").write_bytes(samples.mixed_pdf(DIGITAL[0], SCANNED[0]))
    (root / "locked.pdf").write_bytes(samples.encrypted_pdf("x"))
    (root / "broken.pdf").write_bytes(samples.corrupt_pdf())
    (root / "empty.pdf").write_bytes(samples.zero_page_pdf())
    (root / "notes.pdf").write_bytes(b"not a pdf at all")
    (root / "ignored.txt").write_text("not a pdf, not picked up")
    return root


def run(settings: Settings, folder: Path, out: Path, force: bool = False) -> str:
    db = Database(settings.database_url)
    ingested = create_job(settings, db, JobRequest(folder, out, "auto", force=force))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    write_outputs(load_results(db, ingested.job_id), out)
    return ingested.job_id


def test_folder_end_to_end(db_url: str, folder: Path, tmp_path: Path) -> None:
    settings = Settings(database_url=db_url, concurrency=2)
    job_id = run(settings, folder, tmp_path / "out")
    results = load_results(Database(db_url), job_id)
    docs = {d.name: d for d in results.documents}

    assert docs["digital"].status == "done" and docs["sub__scan"].status == "done"
    bad = {n: docs[n].error for n in ("locked", "broken", "empty", "notes")}
    assert all(docs[n].status == "failed" for n in bad)
    assert "encrypted" in (bad["locked"] or "") and "not a PDF" in (bad["notes"] or "")
    assert "ignored" not in docs

    digital_text = "\n".join(p.text or "" for p in docs["digital"].pages)
    assert cer(digital_text, "\n".join(DIGITAL)) < 0.01
    assert [p.engine for p in docs["digital"].pages] == ["textlayer", "textlayer"]
    assert cer(docs["sub__scan"].pages[0].text or "", SCANNED[0]) < 0.03
    assert [p.engine for p in docs["mixed"].pages] == ["textlayer", "tesseract"]

    with Database(db_url).session() as session:
        statuses = session.scalars(select(Page.status).where(Page.job_id == job_id)).all()
        attempts = session.scalar(select(func.count()).select_from(Attempt))
    assert len(statuses) == 5 and all(PageStatus(s).terminal for s in statuses)
    assert attempts == 5

    summary = summary_of(results)
    assert (summary["documents_failed"], summary["pages_succeeded"]) == (4, 5)
    out = tmp_path / "out"
    assert (out / "sub__scan.md").read_text().startswith("<!-- folio: page 1 of 1 -->")
    assert (out / "summary.json").exists() and (out / "mixed.json").exists()


def test_rerun_skips_done_documents_and_force_redoes_them(
    db_url: str, folder: Path, tmp_path: Path
) -> None:
    settings = Settings(database_url=db_url)
    out = tmp_path / "out"
    first = run(settings, folder, out)
    second = load_results(Database(db_url), run(settings, folder, out))
    assert {d.name for d in second.documents if d.status == "skipped"} == {
        "digital",
        "sub__scan",
        "mixed",
    }
    # The rerun's results describe the whole folder: skipped documents carry the earlier pages.
    assert second.page_counts()[PageStatus.SUCCEEDED] == 5
    assert all(d.done_in_job == first for d in second.skipped)
    summary = summary_of(second)
    assert (summary["documents_done"], summary["documents_skipped"]) == (3, 3)
    assert summary["pages_total"] == 5 and first in summary["rerun_note"]
    forced = load_results(Database(db_url), run(settings, folder, out, force=True))
    assert forced.page_counts()[PageStatus.SUCCEEDED] == 5
    elsewhere = load_results(Database(db_url), run(settings, folder, tmp_path / "other"))
    assert elsewhere.page_counts()[PageStatus.SUCCEEDED] == 5


class ExplodingOnSecondPage:
    """A real Engine implementation that crashes on one page, as a buggy engine would."""

    name = "tesseract"

    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        if "Section 2" in page.text_layer:
            raise ZeroDivisionError("engine bug")
        now = datetime.now(UTC)
        return EngineResult(page.text_layer, AttemptStatus.OK, now, now)

    def close(self) -> None:
        return None


def test_a_crashing_page_fails_alone(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.pdf").write_bytes(samples.born_digital_pdf(DIGITAL))
    monkeypatch.setattr(EngineSet, "for_step", lambda self, step: ExplodingOnSecondPage())
    settings = Settings(database_url=sqlite_url, engine="tesseract")
    db = Database(sqlite_url)
    ingested = create_job(settings, db, JobRequest(tmp_path / "in", None, "tesseract"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    with db.session() as session:
        pages = session.scalars(select(Page).order_by(Page.number)).all()
        document = session.scalars(select(Document)).one()
        assert [p.status for p in pages] == ["succeeded", "failed"]
        assert pages[1].failure_category == "internal" and "engine bug" in (pages[1].error or "")
        assert document.status == "partial"


def test_a_page_another_worker_holds_is_left_to_it(sqlite_url: str, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.pdf").write_bytes(samples.born_digital_pdf(DIGITAL))
    settings = Settings(database_url=sqlite_url, engine="textlayer")
    db = Database(sqlite_url)
    ingested = create_job(settings, db, JobRequest(tmp_path / "in", None, "textlayer"))
    held, free = ingested.page_ids
    with db.session() as session:
        claimed = page_path.claim(session.connection(), held, "other-host:1", lease_s=600)
        assert isinstance(claimed, page_path.ClaimedPage)

    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)

    with db.session() as session:
        assert (
            page_path.page_status(session, held) == PageStatus.RUNNING
        )  # not failed under its owner
        assert page_path.page_status(session, free) == PageStatus.SUCCEEDED
        assert session.get(Page, held).lease_owner == "other-host:1"  # type: ignore[union-attr]
