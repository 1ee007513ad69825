"""A job's results read from the database, and written as Markdown/JSON files."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from app.db.engine import Database
from app.db.models import Attempt, Document, Job
from app.domain import DocumentStatus, PageStatus


@dataclass(frozen=True)
class PageResult:
    number: int
    status: str
    engine: str | None
    step: str | None
    text: str | None
    failure_category: str | None
    error: str | None
    attempts: int
    engine_seconds: float
    render_seconds: float | None


@dataclass(frozen=True)
class DocumentResult:
    name: str
    path: str
    status: str
    page_count: int
    error_category: str | None
    error: str | None
    pages: list[PageResult] = field(default_factory=list)


@dataclass(frozen=True)
class JobResults:
    job_id: str
    status: str
    plan: str
    source: str
    documents: list[DocumentResult]

    def page_counts(self) -> Counter[str]:
        return Counter(p.status for d in self.documents for p in d.pages)

    def document_counts(self) -> Counter[str]:
        return Counter(d.status for d in self.documents)

    @property
    def all_pages_have_output(self) -> bool:
        failed_docs = self.document_counts()[DocumentStatus.FAILED]
        return failed_docs == 0 and self.page_counts()[PageStatus.FAILED] == 0


def load_results(db: Database, job_id: str) -> JobResults:
    with db.session() as session:
        job = session.get(Job, job_id)
        if job is None:
            raise KeyError(f"no job {job_id!r}")
        per_page = session.execute(
            select(Attempt.page_id, func.count(), func.sum(Attempt.duration_s))
            .where(Attempt.job_id == job_id)
            .group_by(Attempt.page_id)
        )
        attempts: dict[int, int] = {}
        seconds: dict[int, float] = {}
        for page_id, count, total in per_page:
            attempts[page_id], seconds[page_id] = count, total
        documents = session.scalars(
            select(Document)
            .where(Document.job_id == job_id)
            .order_by(Document.id)
            .options(selectinload(Document.pages))
        )
        docs = [_document_result(d, attempts, seconds) for d in documents]
        return JobResults(job.id, job.status, job.plan_name, job.source, docs)


def _document_result(
    document: Document, attempts: dict[int, int], seconds: dict[int, float]
) -> DocumentResult:
    pages = [
        PageResult(
            number=p.number,
            status=p.status,
            engine=p.final_engine,
            step=p.final_step,
            text=p.text,
            failure_category=p.failure_category,
            error=p.error,
            attempts=attempts.get(p.id, 0),
            engine_seconds=round(seconds.get(p.id) or 0.0, 4),
            render_seconds=p.render_s,
        )
        for p in document.pages
    ]
    return DocumentResult(
        document.name,
        document.path,
        document.status,
        document.page_count,
        document.error_category,
        document.error,
        pages,
    )


def render_markdown(document: DocumentResult) -> str:
    parts = []
    for page in document.pages:
        marker = f"<!-- folio: page {page.number} of {document.page_count} -->"
        if page.status == PageStatus.FAILED:
            marker = (
                f"<!-- folio: page {page.number} of {document.page_count} "
                f"failed ({page.failure_category}): {page.error} -->"
            )
        parts.append(f"{marker}\n\n{page.text or ''}".rstrip() + "\n")
    return "\n".join(parts)


def write_outputs(results: JobResults, out_dir: Path) -> None:
    """`<name>.md` and `<name>.json` per processed document, and `summary.json` for the job."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for document in results.documents:
        if document.status in (DocumentStatus.SKIPPED, DocumentStatus.FAILED):
            continue
        (out_dir / f"{document.name}.md").write_text(render_markdown(document), encoding="utf-8")
        payload = json.dumps(asdict(document), ensure_ascii=False, indent=2)
        (out_dir / f"{document.name}.json").write_text(payload, encoding="utf-8")
    summary = json.dumps(summary_of(results), ensure_ascii=False, indent=2)
    (out_dir / "summary.json").write_text(summary, encoding="utf-8")


def summary_of(results: JobResults) -> dict[str, Any]:
    pages, docs = results.page_counts(), results.document_counts()
    return {
        "job_id": results.job_id,
        "status": results.status,
        "plan": results.plan,
        "source": results.source,
        "documents_total": len(results.documents),
        "documents_done": docs[DocumentStatus.DONE],
        "documents_partial": docs[DocumentStatus.PARTIAL],
        "documents_failed": docs[DocumentStatus.FAILED],
        "documents_skipped": docs[DocumentStatus.SKIPPED],
        "pages_total": sum(pages.values()),
        "pages_succeeded": pages[PageStatus.SUCCEEDED],
        "pages_fallback": pages[PageStatus.FALLBACK],
        "pages_failed": pages[PageStatus.FAILED],
        "documents": [
            {
                "name": d.name,
                "path": d.path,
                "status": d.status,
                "pages": d.page_count,
                "error_category": d.error_category,
                "error": d.error,
                "failed_pages": [
                    {"page": p.number, "category": p.failure_category, "error": p.error}
                    for p in d.pages
                    if p.status == PageStatus.FAILED
                ],
            }
            for d in results.documents
        ],
    }
