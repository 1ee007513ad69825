"""Turning an API request into a job: files checked against the limits, ingested, submitted."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.api.uploads import UploadFolder, UploadTooLarge
from app.db.engine import Database
from app.errors import DocumentError
from app.jobs import document_limits
from app.pdf.render import DocumentLimits, inspect_document
from app.pipeline.ingest import (
    IngestResult,
    JobCaps,
    JobFields,
    ingest_files,
    ingest_source,
    ingest_uploaded,
)
from app.pipeline.ingest_rows import document_name
from app.settings import Settings
from app.storage import Stores
from app.storage.access import AccessPolicy
from app.storage.base import child_location
from app.storage.folder import discover_pdfs
from app.storage.options import StorageOptions

_PDF = "application/pdf"


class FolderRefused(Exception):
    """A server-side folder outside the allowed roots (403), missing (404) or empty (422)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class JobOptions:
    plan_name: str
    dpi: int | None = None
    priority: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # callback_url, repeat_loop_cap ...

    def as_json(self) -> dict[str, Any]:
        options: dict[str, Any] = {"priority": self.priority, "metadata": self.metadata}
        if self.dpi:
            options["dpi"] = self.dpi
        return options | {k: v for k, v in self.extra.items() if v not in (None, [])}


def check_page_limits(settings: Settings, files: Sequence[tuple[Path, str]]) -> None:
    """413 before any job exists when a file or the whole job has too many pages."""
    counting = DocumentLimits(int(settings.api_max_file_mb * 2**20), 2**31)
    total = 0
    for path, name in files:
        try:
            pages = inspect_document(path, counting)
        except DocumentError:
            continue  # ingest records it as a failed document, with the reason
        if pages > settings.api_max_pages_per_file:
            raise UploadTooLarge(
                f"{name!r} has {pages} pages, over the {settings.api_max_pages_per_file} "
                "pages per file limit"
            )
        total += pages
    if total > settings.api_max_pages_per_job:
        raise UploadTooLarge(
            f"the job has {total} pages, over the {settings.api_max_pages_per_job} pages per "
            "job limit"
        )


def create_job(
    settings: Settings,
    db: Database,
    files: Sequence[tuple[Path, str]],
    source: str,
    options: JobOptions,
    api_key_id: int,
) -> IngestResult:
    """Ingest `files` as one job owned by `api_key_id`; bad files become failed documents."""
    check_page_limits(settings, files)
    fields = _job_fields(settings, None, options, api_key_id)
    return ingest_files(db, files, source, fields, limits=_api_limits(settings))


def _api_limits(settings: Settings) -> DocumentLimits:
    base = document_limits(settings)
    return DocumentLimits(
        base.max_bytes, min(base.max_pages, settings.api_max_pages_per_file), base.max_page_pixels
    )


def _job_fields(
    settings: Settings, results_uri: str | None, options: JobOptions, api_key_id: int
) -> JobFields:
    extra = {"options": options.as_json(), "api_key_id": api_key_id}
    return JobFields(results_uri, settings.plan_name(options.plan_name), extra)


def access_policy(settings: Settings) -> AccessPolicy:
    """What an API job may read and write: the objects under `api_allowed_uris`."""
    return AccessPolicy.of(settings.api_allowed_uris)


def create_stored_job(
    settings: Settings,
    db: Database,
    uri: str,
    results_uri: str | None,
    options: JobOptions,
    api_key_id: int,
) -> IngestResult:
    """Ingest the PDFs an s3:// URI names as one job owned by `api_key_id`."""
    caps = JobCaps(settings.api_max_files_per_job, settings.api_max_pages_per_job, False)
    return ingest_source(
        db,
        StorageOptions.of(settings),
        uri,
        _job_fields(settings, results_uri, options, api_key_id),
        limits=_api_limits(settings),
        caps=caps,
        policy=access_policy(settings),
    )


def create_uploaded_job(
    settings: Settings, db: Database, folder: UploadFolder, options: JobOptions, api_key_id: int
) -> IngestResult:
    """Write the uploaded files under `upload_uri` and make a job of the stored objects."""
    assert settings.upload_uri is not None
    check_page_limits(settings, folder.files)
    prefix = child_location(settings.upload_uri, folder.root.name + "/")
    store = Stores(StorageOptions.of(settings).s3).for_uri(prefix)
    uploaded = [
        (store.write_file(child_location(prefix, path.name), path, _PDF), path, name)
        for path, name in folder.files
    ]
    fields = _job_fields(settings, None, options, api_key_id)
    return ingest_uploaded(db, uploaded, prefix, fields, limits=_api_limits(settings))


def folder_files(settings: Settings, folder: str) -> tuple[Path, list[tuple[Path, str]]]:
    """The PDFs under a server-side folder that lies inside one of `api_allowed_roots`."""
    path = Path(folder).resolve()
    roots = [Path(r).resolve() for r in settings.api_allowed_roots]
    if not any(path.is_relative_to(root) for root in roots):
        raise FolderRefused(403, "the folder is not under any of the server's allowed roots")
    if not path.is_dir():
        raise FolderRefused(404, "no such folder on the server")
    # A symlink under an allowed root must not reach a file outside it.
    pdfs = [p for p in discover_pdfs(path) if p.resolve().is_relative_to(path)]
    if not pdfs:
        raise FolderRefused(422, "no PDF under the folder")
    files = [(p, document_name(p, path)) for p in pdfs]
    if len(files) > settings.api_max_files_per_job:
        raise UploadTooLarge(f"more than {settings.api_max_files_per_job} files in one job")
    return path, files


def discard(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def drop_failed_uploads(folder: UploadFolder, ingested: IngestResult) -> None:
    """An uploaded file whose document failed at ingest (not a PDF, corrupt, a bomb) is never
    read again: it goes now, not at retention, and so does a folder left empty."""
    for path, name in folder.files:
        if name in ingested.failed:
            path.unlink(missing_ok=True)
    if not any(folder.root.iterdir()):
        folder.root.rmdir()
