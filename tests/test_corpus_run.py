"""The real PDFs in ../shared/corpus (skipped cleanly when that folder is absent)."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from app.db.engine import Database
from app.db.models import Page
from app.domain import PageStatus
from app.jobs import JobRequest, create_job, run_job_locally
from app.jobs.results import load_results
from app.settings import Settings
from tests.conftest import SHARED
from tests.textmetrics import cer

PDFS = SHARED / "corpus" / "pdfs"
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not PDFS.is_dir(), reason="../shared/corpus is absent"),
]


def words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def run_folder(folder: Path, db_url: str) -> str:
    settings = Settings(database_url=db_url)
    db = Database(db_url)
    ingested = create_job(settings, db, JobRequest(folder, None, "auto"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    return ingested.job_id


def test_born_digital_near_exact_and_scan_under_three_percent(
    tmp_path: Path, sqlite_url: str
) -> None:
    for name in ("docling__multi_page.pdf", "olmocr__edgar.pdf", "docling__ocr_test.pdf"):
        shutil.copy(PDFS / name, tmp_path / name)
    results = load_results(Database(sqlite_url), run_folder(tmp_path, sqlite_url))
    docs = {d.name: d for d in results.documents}
    for name, left_out in (("docling__multi_page", ""), ("olmocr__edgar", "3:42 PM")):
        text = "\n".join(p.plain_text or "" for p in docs[name].pages)
        reference = (PDFS / "gt" / f"{name}.pymupdf_textlayer.txt").read_text()
        found, expected = words(text), words(reference)
        # Every word is the layer's own, in reading order rather than the layer's; only running
        # lines are left out (the Wikipedia print's date header and URL footer).
        assert not found - expected, name
        assert (expected - found).total() <= 0.06 * expected.total(), name
        assert not left_out or left_out not in text
    scan = docs["docling__ocr_test"].pages[0]
    reference = (PDFS / "gt" / "docling__ocr_test.docling_ocr_groundtruth_tesseract.md").read_text()
    assert scan.engine == "tesseract"
    assert cer(scan.text or "", reference) < 0.03


@pytest.mark.slow
def test_whole_corpus_ends_with_every_page_terminal(sqlite_url: str) -> None:
    job_id = run_folder(PDFS, sqlite_url)
    with Database(sqlite_url).session() as session:
        statuses = session.scalars(select(Page.status).where(Page.job_id == job_id)).all()
    assert len(statuses) > 200
    assert all(PageStatus(s).terminal for s in statuses)
    assert statuses.count(PageStatus.FAILED) == 0
