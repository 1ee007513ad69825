"""The job facade: create a job from files, run it in-process, settle it. CLI and API call this."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from app.db import repo
from app.db.engine import Database
from app.db.models import Document
from app.domain import DocumentStatus, JobStatus
from app.engines.registry import EngineSet
from app.errors import ConfigError
from app.metrics import FolioMetrics
from app.pdf.render import DocumentLimits
from app.pipeline.ingest import IngestResult, discover_pdfs, document_name, ingest
from app.pipeline.local import PageCallback, run_pages
from app.pipeline.process_page import PageProcessor
from app.report.build import job_server_tokens
from app.servermetrics.sampler import sampler_from_settings
from app.settings import Settings


@dataclass(frozen=True)
class JobRequest:
    source: Path
    out_dir: Path | None
    plan_name: str
    force: bool = False
    dpi: int | None = None


def document_limits(settings: Settings) -> DocumentLimits:
    return DocumentLimits(
        int(settings.max_file_mb * 2**20),
        settings.max_pages_per_document,
        int(settings.max_page_megapixels * 1e6),
    )


def job_priority(options: dict[str, Any] | None) -> int:
    """The job's `priority` option (0-9, higher first; API jobs may set it)."""
    return int((options or {}).get("priority") or 0)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def create_job_from_folder(settings: Settings, db: Database, request: JobRequest) -> IngestResult:
    """Ingest every PDF under `request.source` as one job."""
    plan_name = settings.plan_name(request.plan_name)
    settings.plan(plan_name)  # fail fast on an unknown plan
    root = request.source
    files = [(path, document_name(path, root)) for path in discover_pdfs(root)]
    options = {"dpi": request.dpi} if request.dpi else {}
    return ingest(
        db,
        files,
        source=str(root.resolve()),
        out_dir=str(request.out_dir.resolve()) if request.out_dir else None,
        plan_name=plan_name,
        limits=document_limits(settings),
        force=request.force,
        job_fields={"options": options},
    )


def run_job_locally(
    settings: Settings,
    db: Database,
    job_id: str,
    page_ids: Sequence[int],
    on_page: PageCallback | None = None,
    metrics: FolioMetrics | None = None,
) -> None:
    """Process the job's pages in this process, then settle documents and the job."""
    if settings.concurrency < 1:
        raise ConfigError("concurrency must be at least 1")
    with db.session() as session:
        repo.set_job_status(session, job_id, JobStatus.RUNNING)
        plan_name = repo.job_plan(session, job_id)
    engines = EngineSet(settings)
    sampler = sampler_from_settings(settings, db, worker_id())
    try:
        processor = PageProcessor(
            settings, db, engines, owner=worker_id(), metrics=metrics, sampler=sampler
        )
        run_pages(processor, page_ids, settings.page_concurrency(plan_name), on_page)
    finally:
        engines.close()
        if sampler:
            sampler.finish(job_id)
    settle_job(db, job_id)
    if metrics and sampler:
        metrics.observe_server_tokens(job_server_tokens(db, job_id))


def settle_job(db: Database, job_id: str) -> bool:
    """Settle finished documents; mark the job done once no page is left open."""
    with db.session() as session:
        running = session.scalars(
            select(Document.id).where(
                Document.job_id == job_id, Document.status == DocumentStatus.RUNNING
            )
        )
        for document_id in list(running):
            repo.settle_document(session, document_id)
        if repo.open_pages(session, job_id):
            return False
        repo.set_job_status(session, job_id, JobStatus.DONE)
        return True
