"""`folio serve` and `folio watch`: what the API may read and accept, and the watched inbox."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class ServiceFields(BaseModel):
    """The API server's allowances and limits, retention, and the watched inbox."""

    api_allowed_uris: list[str] = Field(
        default_factory=list,
        description="s3:// prefixes a JSON `POST /v1/jobs` may read from or send results to "
        "(the server's credentials do the reading); empty refuses every URI.",
    )
    api_allowed_roots: list[Path] = Field(
        default_factory=list,
        description="Server folders a JSON `POST /v1/jobs` may name; empty refuses every folder.",
    )
    retention_days: float | None = Field(
        default=None,
        gt=0,
        description="`folio serve`: delete the files of jobs finished longer ago than this "
        "(uploads, stray result zips), hourly; database rows stay. Unset keeps everything.",
    )
    api_concurrent_jobs: int = Field(
        default=2, ge=1, description="Jobs the API server runs at once in-process."
    )
    api_max_upload_mb: float = Field(
        default=1024.0, gt=0, description="Largest request body of an upload, in MiB."
    )
    api_upload_dir_max_mb: float = Field(
        default=10240.0,
        gt=0,
        description="Most MiB the upload folder (upload_dir) holds in all, every job's files "
        "together: an upload that would pass it is refused (507) and nothing of it stays. "
        "Files leave it with retention (retention_days) or as their documents fail.",
    )
    api_max_file_mb: float = Field(
        default=256.0, gt=0, description="Largest single uploaded file (or zip member), in MiB."
    )
    api_max_files_per_job: int = Field(default=1000, ge=1, description="Most files in one job.")
    api_max_pages_per_file: int = Field(
        default=2000, ge=1, description="Most pages in one uploaded PDF."
    )
    api_max_pages_per_job: int = Field(
        default=20_000, ge=1, description="Most pages in one job submitted over the API."
    )
    watch_window_s: float = Field(
        default=10.0, ge=0, description="`folio watch`: seconds to gather files into one job."
    )
    watch_poll_s: float = Field(
        default=2.0, gt=0, description="`folio watch`: seconds between looks at the inbox."
    )
