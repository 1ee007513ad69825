"""The job facade: create a job from files, run it in-process, settle it. CLI and API call this.

What follows a job sits beside it: its results (`results.py`), the watched upload folder that
makes jobs (`watch.py`) and the retention of old jobs' files (`retention.py`)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from app.db import documents, jobs, pages
from app.db.engine import Database
from app.domain import Executor, JobStatus, PageStatus
from app.engines.registry import EngineSet
from app.errors import ConfigError
from app.jobs.delivery import deliver
from app.jobs.results import load_results, publish
from app.pdf.render import DocumentLimits
from app.pipeline.cancel import CancelWatch
from app.pipeline.ingest import IngestResult, JobFields, ingest_source
from app.pipeline.ingest_rows import sha256_of
from app.pipeline.local import PageCallback, run_pages
from app.pipeline.process_page import PageProcessor
from app.report.build import build_report, job_server_tokens
from app.report.metrics import FolioMetrics
from app.report.render import ReportFormat, render_report
from app.searchable.factory import searchable_writer
from app.servermetrics.sampler import sampler_from_settings
from app.settings import Settings
from app.storage import Stores, is_store_uri
from app.storage.base import ObjectUri, local_path
from app.storage.listing import is_stored_source, listed_pages
from app.storage.options import StorageOptions
from app.storage.targets import PresignedTarget, ResultTarget, result_target


@dataclass(frozen=True)
class JobRequest:
    source: Path | str  # a PDF, a folder (or file://), an s3:// prefix or a manifest
    out_dir: Path | str | None  # a folder (or file://) or an s3:// prefix
    plan_name: str
    force: bool = False
    dpi: int | None = None
    # File name (`<document>.md`, `summary.json` ...) -> a pre-signed PUT URL for it.
    result_urls: dict[str, str] = field(default_factory=dict)
    pdf: bool | None = None  # a searchable PDF per document; None: the settings' default

    def options(self, pdf_default: bool = False) -> dict[str, Any]:
        """The job's options as the request asks them (`pdf` only where one is asked for)."""
        options: dict[str, Any] = {"dpi": self.dpi} if self.dpi else {}
        if self.result_urls:
            options["result_urls"] = self.result_urls
        if self.pdf if self.pdf is not None else pdf_default:
            options["pdf"] = True
        return options

    @property
    def stored(self) -> bool:
        """Whether the documents come from an object store."""
        return is_stored_source(str(self.source))


def location(where: Path | str) -> str:
    """How a job records a place: an s3:// URI as given, a local path (or `file://` URI) as
    an absolute path."""
    text = str(where)
    return text if is_store_uri(text) else str(local_path(text).resolve())


def _same_place(a: str, b: str) -> bool:
    """Two recorded places (see `location`) that are one folder or prefix."""
    return a.rstrip("/") == b.rstrip("/")


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


def create_job(settings: Settings, db: Database, request: JobRequest) -> IngestResult:
    """Ingest every PDF `request.source` names (a folder or file, a store's prefix, a
    manifest) as one job."""
    plan_name = settings.plan_name(request.plan_name)
    settings.plan(plan_name)  # fail fast on an unknown plan
    options = request.options(settings.searchable_pdf)
    out_dir = location(request.out_dir) if request.out_dir else None
    if out_dir and _same_place(out_dir, location(request.source)):
        raise ConfigError(
            f"--out {request.out_dir} is the input itself: the results would replace the "
            ".md and .json files there; choose another place"
        )
    return ingest_source(
        db,
        StorageOptions.of(settings),
        location(request.source),
        JobFields(out_dir, plan_name, {"options": options}),
        limits=document_limits(settings),
        force=request.force,
    )


def start_job(settings: Settings, db: Database, request: JobRequest) -> IngestResult:
    """`folio run`'s job: the unfinished job of an interrupted run on the same input, resumed
    (its open pages only), or a new one."""
    job_id = interrupted_run(settings, db, request)
    if job_id is None:
        return create_job(settings, db, request)
    release_dead_leases(db, job_id)
    with db.session() as session:
        open_pages = pages.open_pages(session, job_id)
        count = documents.count_documents(session, job_id)
    return IngestResult(job_id, open_pages, count, resumed=True)


def interrupted_run(settings: Settings, db: Database, request: JobRequest) -> str | None:
    """The newest unfinished local job made from the same files (path and content), into the
    same output folder, with the same plan and options."""
    if request.force or request.out_dir is None:
        return None
    options = request.options(settings.searchable_pdf)
    with db.session() as session:
        source, out_dir = location(request.source), location(request.out_dir)
        plan_name = settings.plan_name(request.plan_name)
        job = jobs.unfinished_local_job(session, source, out_dir, plan_name)
        if job is None or _asked_options(job.options) != options:
            return None
        if request.stored:
            recorded = {(d.path, d.etag) for d in job.documents}
        else:
            recorded = {(d.path, d.sha256) for d in job.documents}
    return job.id if _input_now(settings, request) == recorded else None


def _input_now(settings: Settings, request: JobRequest) -> set[tuple[str, str | None]]:
    """What the request's source holds now: (path, SHA-256), or (URI, ETag) in a store."""
    storage = StorageOptions.of(settings)
    listed = listed_pages(Stores(storage.s3), location(request.source), storage.list_page_size)
    if not request.stored:
        return {(o.uri, sha256_of(Path(o.uri))) for page in listed for o in page}
    return {(o.uri, getattr(o, "etag", None)) for page in listed for o in page}


def _asked_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """A job's options as its request gave them, without what running it added."""
    return {k: v for k, v in (options or {}).items() if k not in ("executor", "delivery")}


def interrupted_api_jobs(db: Database) -> list[str]:
    """API jobs a stopped server left queued or running, or whose results it could not send,
    oldest first."""
    unfinished = [JobStatus.PENDING, JobStatus.RUNNING, JobStatus.UNDELIVERED]
    with db.session() as session:
        return jobs.unfinished_api_jobs(session, unfinished)


def release_dead_leases(db: Database, job_id: str) -> int:
    """Free the job's pages held by processes of this machine that are gone (killed, stopped);
    a page another machine holds frees itself one lease after its holder's last heartbeat."""
    with db.session() as session:
        dead = [page_id for page_id, owner in pages.lease_owners(session, job_id) if _gone(owner)]
        pages.release_pages(session, dead)
    return len(dead)


def _gone(owner: str | None) -> bool:
    """Whether a lease owner (`host:pid`, see `worker_id`) is a process of this host that ended."""
    host, _, pid = (owner or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False


def run_job_locally(
    settings: Settings,
    db: Database,
    job_id: str,
    page_ids: Sequence[int],
    on_page: PageCallback | None = None,
    metrics: FolioMetrics | None = None,
    cancels: CancelWatch | None = None,
    on_done: Callable[[str], object] | None = None,
) -> None:
    """Process the job's pages in this process, then settle documents and the job
    (`on_done`: see `settle_job`)."""
    if settings.concurrency < 1:
        raise ConfigError("concurrency must be at least 1")
    with db.session() as session:
        jobs.mark_job_running(session, job_id, Executor.LOCAL)
        plan_name = jobs.job_plan(session, job_id)
    engines = EngineSet(settings)
    sampler = sampler_from_settings(settings, db, worker_id())
    processor = PageProcessor(
        settings, db, engines, owner=worker_id(), metrics=metrics, sampler=sampler, cancels=cancels
    )
    try:
        run_pages(processor, page_ids, settings.page_concurrency(plan_name), on_page)
    finally:
        processor.close()
        engines.close()
        if sampler:
            sampler.finish(job_id)
    settle_job(db, job_id, on_done)
    if metrics and sampler:
        metrics.observe_server_tokens(job_server_tokens(db, job_id))


def settle_job(db: Database, job_id: str, on_done: Callable[[str], object] | None = None) -> bool:
    """Settle finished documents; mark the job done once no page is left open, after
    `on_done(job_id)` (its results sent out) so that a job reads done only with them there."""
    with db.session() as session:
        for document_id in documents.running_documents(session, job_id):
            documents.settle_document(session, document_id)
        if pages.open_pages(session, job_id):
            return False
        if on_done is None:
            jobs.set_job_status(session, job_id, JobStatus.DONE)
            return True
    on_done(job_id)
    with db.session() as session:
        jobs.set_job_status(session, job_id, JobStatus.DONE)
    return True


def close_open_pages(
    db: Database,
    job_id: str,
    category: str,
    reason: str,
    on_done: Callable[[str], object] | None = None,
) -> None:
    """Fail every page of the job that is not terminal yet, then settle the job (`on_done`:
    see `settle_job`)."""
    with db.session() as session:
        for page_id in pages.open_pages(session, job_id):
            pages.finish_page(
                session, page_id, PageStatus.FAILED, failure_category=category, error=reason
            )
    settle_job(db, job_id, on_done)


def cancel_job(db: Database, job_id: str) -> bool:
    """Cancel the job: its open pages fail as `cancelled`; the processes running its pages
    stop their requests at their next cancel check. False when it had ended already."""
    with db.session() as session:
        status = jobs.job_status(session, job_id)
        if status is None:
            raise KeyError(f"no job {job_id!r}")
        if status in (JobStatus.DONE, JobStatus.CANCELLED):
            return False
        jobs.set_job_status(session, job_id, JobStatus.CANCELLED)
    close_open_pages(db, job_id, "cancelled", "the job was cancelled")
    return True


def publish_job(
    settings: Settings,
    db: Database,
    job_id: str,
    target: ResultTarget | None = None,
    finishing: bool = False,
) -> str | None:
    """Send a job's results (per-document Markdown and JSON, summary.json, report.json) to
    `target`, or where the job asked: its pre-signed PUT URLs, else its s3:// results prefix.
    None when it asked for neither (a local folder is the command's that ran the job)."""
    if target is None:
        target = _asked_target(settings, db, job_id)
    if target is None:
        return None
    report = render_report(build_report(db, settings, job_id), ReportFormat.JSON)
    results = load_results(db, job_id)
    if finishing:  # sent as the job ends, just before it is marked so
        results = replace(results, status=JobStatus.DONE)
    with searchable_writer(settings, results.pdf) as pdfs:
        publish(results, report, target, pdfs)
    return target.where


def deliver_job(settings: Settings, db: Database, job_id: str) -> None:
    """Send the job's results where it asked, as it ends (retried on an outage; the job reads
    `undelivered` and DeliveryFailed is raised when they could not be sent)."""
    publish = partial(publish_job, settings, db, finishing=True)
    deliver(db, job_id, publish, settings.delivery_retries, settings.delivery_retry_s)


def _asked_target(settings: Settings, db: Database, job_id: str) -> ResultTarget | None:
    with db.session() as session:
        out_dir, options, api_key_id = jobs.destination(session, job_id)
    if urls := options.get("result_urls"):
        return PresignedTarget(urls, settings.storage_timeout_s, settings.result_urls_allow_private)
    if out_dir and is_store_uri(out_dir):
        return result_target(
            results_prefix(out_dir, job_id, api_key_id), Stores(StorageOptions.of(settings).s3)
        )
    return None


def results_prefix(out_dir: str, job_id: str, api_key_id: int | None) -> str:
    """Where a job's results go in a store: an API job's under `<results_uri>/<job id>/`, so
    that no other job (another key's, a rerun) and no object of the caller's shares a name
    with them; a CLI job's (`--out`, the operator's own choice) right under the prefix."""
    if api_key_id is None:
        return out_dir
    return str(ObjectUri.parse(out_dir).child(f"{job_id}/"))
