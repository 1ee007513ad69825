"""Turning a folder of files into a job: one document row per file, one page row per page."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.db import documents, jobs
from app.db.engine import Database
from app.db.models import Document, Page
from app.domain import DocumentStatus, PageStatus
from app.errors import DocumentError
from app.pdf.render import DocumentLimits, inspect_document

_HASH_CHUNK = 1 << 20


@dataclass
class IngestResult:
    job_id: str
    page_ids: list[int] = field(default_factory=list)
    documents: int = 0
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    resumed: bool = False  # an interrupted job taken up again, not a new one


def document_name(path: Path, root: Path) -> str:
    """A stable, flat output name: the path under the input folder, without `.pdf`."""
    relative = path.relative_to(root) if root.is_dir() else Path(path.name)
    return "__".join(relative.with_suffix("").parts)


def sha256_of(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def ingest(
    db: Database,
    files: Iterable[tuple[Path, str]],
    *,
    source: str,
    out_dir: str | None,
    plan_name: str,
    limits: DocumentLimits,
    force: bool = False,
    job_fields: dict[str, Any] | None = None,
) -> IngestResult:
    """Create the job, its documents and pages. Bad files become failed documents, not errors."""
    with db.session() as session:
        job = jobs.create_job(session, source, out_dir, plan_name, **(job_fields or {}))
        result = IngestResult(job_id=job.id)
        for path, name in files:
            _add_document(session, result, path, name, out_dir, limits, force)
    return result


def _add_document(
    session: Any,
    result: IngestResult,
    path: Path,
    name: str,
    out_dir: str | None,
    limits: DocumentLimits,
    force: bool,
) -> None:
    digest = sha256_of(path)
    size = path.stat().st_size if path.exists() else 0
    document = Document(
        job_id=result.job_id,
        path=str(path.resolve()),
        name=name,
        sha256=digest,
        size_bytes=size,
        status=DocumentStatus.PENDING,
    )
    session.add(document)
    result.documents += 1
    done = (
        digest and out_dir and not force and documents.find_done_document(session, digest, out_dir)
    )
    if done:
        skip_document(result, document, done, "already done (same content, same --out)")
        return
    add_pages(session, result, document, path, limits)


def skip_document(result: IngestResult, document: Document, done: Document, why: str) -> None:
    """Mark `document` skipped: `done`, an earlier job's, has its pages already."""
    document.page_count = done.page_count
    document.status = DocumentStatus.SKIPPED
    document.error = why
    result.skipped.append(document.name)


def fail_document(result: IngestResult, document: Document, exc: DocumentError) -> None:
    """Mark `document` failed with the error's category and reason; the job goes on."""
    document.status = DocumentStatus.FAILED
    document.error_category = exc.category
    document.error = exc.reason
    result.failed[document.name] = exc.reason


def add_pages(
    session: Any, result: IngestResult, document: Document, path: Path, limits: DocumentLimits
) -> None:
    """Count the pages of `document` (read from `path`, a local copy) and add a row for each;
    a document Folio cannot process is marked failed instead."""
    try:
        document.page_count = inspect_document(path, limits)
    except DocumentError as exc:
        fail_document(result, document, exc)
        return
    add_page_rows(session, result, document)


def add_page_rows(session: Any, result: IngestResult, document: Document) -> None:
    """A pending row for each of the counted pages of `document`, which starts running."""
    document.status = DocumentStatus.RUNNING
    session.flush()
    pages = [
        Page(job_id=result.job_id, document_id=document.id, number=n, status=PageStatus.PENDING)
        for n in range(1, document.page_count + 1)
    ]
    session.add_all(pages)
    session.flush()
    result.page_ids.extend(p.id for p in pages)
