"""The API's services: each takes the caller's key id and answers only about that key's jobs."""

from __future__ import annotations

import logging
import os
import tempfile
import uuid
import zipfile
from pathlib import Path

from fastapi import HTTPException
from starlette.datastructures import UploadFile

from app.api import schemas
from app.api.context import ApiContext
from app.api.submit import (
    FolderRefused,
    JobOptions,
    access_policy,
    create_job,
    create_stored_job,
    create_uploaded_job,
    discard,
    drop_failed_uploads,
    folder_files,
)
from app.api.uploads import UploadError, UploadFolder, UploadLimits
from app.db import job_views
from app.db.engine import Session
from app.db.models import Job
from app.domain import JobStatus
from app.errors import ObjectRefused, StoreUnavailable
from app.jobs import cancel_job
from app.jobs.results import load_results, write_outputs
from app.pipeline.ingest import NoObjects, TooManyObjects, TooManyPages
from app.report.build import listed_reports
from app.report.pricing import pricing_from_settings
from app.report.rows import ListedJob
from app.searchable.factory import searchable_writer
from app.storage.access import PlaceRefused, check_url, check_urls

log = logging.getLogger(__name__)


def submit_uploads(
    ctx: ApiContext, key: int, uploads: list[UploadFile], options: schemas.JobOptionsIn
) -> schemas.JobOut:
    """Store the uploaded files in a fresh folder and start a job on them."""
    job_options = _options(ctx, options)
    folder = UploadFolder(
        Path(ctx.settings.upload_dir) / uuid.uuid4().hex, UploadLimits.from_settings(ctx.settings)
    )
    try:
        for upload in uploads:
            folder.add(upload.filename or "file", upload.file)
        source = f"upload:{folder.root.name}"
        if ctx.settings.upload_uri:  # workers elsewhere read them from the store
            ingested = create_uploaded_job(ctx.settings, ctx.db, folder, job_options, key)
            discard(folder.root)
        else:
            ingested = create_job(ctx.settings, ctx.db, folder.files, source, job_options, key)
            drop_failed_uploads(folder, ingested)
    except UploadError as exc:
        discard(folder.root)
        raise HTTPException(exc.status, str(exc)) from exc
    except StoreUnavailable as exc:
        discard(folder.root)
        log.warning("upload: the object store is unreachable: %s", exc)
        raise HTTPException(503, "the upload store is unreachable; try again later") from exc
    except BaseException:  # no job holds the files: nothing may stay behind on disk
        discard(folder.root)
        raise
    ctx.runner.submit(ingested.job_id)
    return get_job(ctx, key, ingested.job_id)


def submit_uri(ctx: ApiContext, key: int, request: schemas.ObjectJob) -> schemas.JobOut:
    """Start a job on the PDFs under an s3:// URI that the server allows."""
    _check_places(ctx, request)
    job_options = _options(ctx, request)
    if request.result_urls:
        job_options.extra["result_urls"] = request.result_urls
    try:
        ingested = create_stored_job(
            ctx.settings, ctx.db, request.uri, request.results_uri, job_options, key
        )
    except (TooManyObjects, TooManyPages) as exc:
        raise HTTPException(413, str(exc)) from exc
    except NoObjects as exc:
        raise HTTPException(422, str(exc)) from exc
    except ObjectRefused as exc:  # Folio's own sentence: the URI and what the store said
        raise HTTPException(422, f"cannot list {request.uri}: {exc}") from exc
    except StoreUnavailable as exc:  # its text may name the store's internal endpoint
        log.warning("submit of %s: the object store is unreachable: %s", request.uri, exc)
        raise HTTPException(503, "the object store is unreachable; try again later") from exc
    ctx.runner.submit(ingested.job_id)
    return get_job(ctx, key, ingested.job_id)


def _check_places(ctx: ApiContext, request: schemas.ObjectJob) -> None:
    """What the job would read and write, through app/storage/access.py: its URIs under the
    allowed ones (403), its result URLs to public addresses unless allowed (422)."""
    policy = access_policy(ctx.settings)
    try:
        for uri in (request.uri, request.results_uri):
            if uri is not None:
                policy.check(uri)
    except PlaceRefused as exc:
        raise HTTPException(403, str(exc)) from exc
    try:
        check_urls(request.result_urls, ctx.settings.result_urls_allow_private, "result URL")
    except PlaceRefused as exc:
        raise HTTPException(422, f"result_urls{exc}") from exc


def submit_folder(ctx: ApiContext, key: int, request: schemas.FolderJob) -> schemas.JobOut:
    """Start a job on a folder that already is on the server, under an allowed root."""
    job_options = _options(ctx, request)
    try:
        root, files = folder_files(ctx.settings, request.folder)
        ingested = create_job(ctx.settings, ctx.db, files, str(root), job_options, key)
    except FolderRefused as exc:
        raise HTTPException(exc.status, exc.detail) from exc
    except UploadError as exc:
        raise HTTPException(exc.status, str(exc)) from exc
    ctx.runner.submit(ingested.job_id)
    return get_job(ctx, key, ingested.job_id)


def _options(ctx: ApiContext, options: schemas.JobOptionsIn) -> JobOptions:
    plan = ctx.settings.plan_name(options.engine)
    if plan not in ctx.settings.plans:
        known = ", ".join(sorted(ctx.settings.plans))
        raise HTTPException(422, f"unknown engine plan {options.engine!r}; known: {known}")
    if options.callback_url:
        try:
            check_url(options.callback_url, ctx.settings.webhooks.allow_private, "callback URL")
        except PlaceRefused as exc:
            raise HTTPException(422, f"callback_url: {exc}") from exc
    extra = options.model_dump(include={"callback_url", "callback_events", "repeat_loop_cap"})
    if options.pdf if options.pdf is not None else ctx.settings.searchable_pdf:
        extra["pdf"] = True
    return JobOptions(plan, options.dpi, options.priority, options.metadata, extra)


def owned(session: Session, job_id: str, key: int) -> Job:
    job = job_views.owned_job(session, job_id, key)
    if job is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return job


def get_job(ctx: ApiContext, key: int, job_id: str) -> schemas.JobOut:
    with ctx.db.session() as session:
        job = owned(session, job_id, key)
        return schemas.JobOut.of(job, job_views.progress(session, job.id))


def list_jobs(
    ctx: ApiContext,
    key: int,
    status: JobStatus | None,
    limit: int,
    offset: int,
    figures: bool = False,
) -> schemas.JobList:
    """The key's jobs, newest first; with `figures`, each with its report's headline figures."""
    with ctx.db.session() as session:
        jobs, total = job_views.list_jobs(session, key, status, limit, offset)
        items = [schemas.JobOut.of(j, job_views.progress(session, j.id)) for j in jobs]
    if figures:
        listed = [ListedJob(j.id, j.plan, j.status, j.started_at, j.finished_at) for j in items]
        reports = listed_reports(ctx.db, listed, pricing_from_settings(ctx.settings))
        for item in items:
            item.figures = schemas.JobFigures.of(reports[item.id].report)
    return schemas.JobList(items=items, total=total, limit=limit, offset=offset)


def documents(ctx: ApiContext, key: int, job_id: str) -> list[schemas.DocumentOut]:
    with ctx.db.session() as session:
        owned(session, job_id, key)
        failed = job_views.failed_pages(session, job_id)
        return [
            schemas.DocumentOut.of(d, failed.get(d.id))
            for d in job_views.documents(session, job_id)
        ]


def results_zip(ctx: ApiContext, key: int, job_id: str) -> Path:
    """A temporary zip of the job's outputs as `folio run` writes them; the caller deletes it."""
    get_job(ctx, key, job_id)
    results = load_results(ctx.db, job_id)
    fd, name = tempfile.mkstemp(prefix="folio-results-", suffix=".zip")
    os.close(fd)
    try:
        with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(name, "w") as archive:
            with searchable_writer(ctx.settings, results.pdf) as pdfs:
                write_outputs(results, Path(tmp), pdfs)
            for path in sorted(Path(tmp).iterdir()):
                archive.write(path, path.name, compress_type=zipfile.ZIP_DEFLATED)
    except BaseException:
        Path(name).unlink(missing_ok=True)  # the route never gets it to delete
        raise
    return Path(name)


def cancel(ctx: ApiContext, key: int, job_id: str) -> schemas.JobOut:
    with ctx.db.session() as session:
        job = owned(session, job_id, key)
        status = job.status
    if status in (JobStatus.DONE, JobStatus.CANCELLED):
        raise HTTPException(409, f"job {job_id!r} is {status} already")
    ctx.runner.cancel(job_id)  # first: this process's streams of the job stop at once
    if not cancel_job(ctx.db, job_id):
        raise HTTPException(409, f"job {job_id!r} ended meanwhile")
    return get_job(ctx, key, job_id)
