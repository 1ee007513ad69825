"""What a new job takes: its options, and the JSON bodies that name a server folder or an
object-store prefix (an upload's options come as form fields of the same names)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class JobOptionsIn(BaseModel):
    """Options of a new job."""

    model_config = ConfigDict(extra="forbid")

    engine: str | None = Field(default=None, max_length=64, description="Attempt plan name.")
    dpi: int | None = Field(default=None, ge=36, le=1200, description="Rendering resolution.")
    priority: int = Field(
        default=0,
        ge=0,
        le=9,
        description="Waiting jobs and their queued tasks go highest first.",
    )
    metadata: dict[str, Any] = Field(default_factory=dict, description="Kept with the job.")
    callback_url: str | None = Field(
        default=None,
        max_length=2048,
        description="Webhook for this job's end (job.finished, job.failed, job.cancelled; "
        "job.undelivered first when its results could not be sent), signed with your key's "
        "secret (GET /v1/webhook); default: your key's webhook.",
        examples=["https://example.com/folio-hook"],
    )
    callback_events: list[Literal["page.finished"]] = Field(
        default_factory=list,
        max_length=1,
        description="Also send these events to callback_url (opt-in: one per page).",
    )
    pdf: bool | None = Field(
        default=None,
        description="Also write each document as a searchable PDF (`<document>.pdf` beside its "
        ".md and .json, in the results zip, the results_uri prefix and result_urls): the "
        "original with the kept text as an invisible layer. Default: the server's "
        "searchable_pdf setting.",
    )
    repeat_loop_cap: int | None = Field(
        default=None,
        ge=0,
        le=8,
        description="VLM attempts on a page that may repeat a loop already seen on it before "
        "its other VLM steps are skipped (default: the server's repeat_loop_cap).",
    )


class FolderJob(JobOptionsIn):
    """`POST /v1/jobs` as JSON: a folder on the server, under one of its allowed roots."""

    folder: str = Field(
        min_length=1, max_length=4096, pattern=r"^[^\x00]+$", description="Server-side folder path."
    )


class ObjectJob(JobOptionsIn):
    """`POST /v1/jobs` as JSON: PDFs in an object store, under one of the server's allowed
    URIs (`api_allowed_uris`); the server's own credentials read them."""

    uri: str = Field(
        min_length=6,
        max_length=2048,
        pattern=r"^s3://[^/]+(/.*)?$",
        description="An s3://bucket/prefix/ whose PDFs make the job, or an s3:// manifest "
        "(.txt) with one s3:// URI per line.",
        examples=["s3://scans/2026/batch-7/"],
    )
    results_uri: str | None = Field(
        default=None,
        max_length=2048,
        pattern=r"^s3://[^/]+(/.*)?$",
        description="An s3:// prefix the results go to when the job ends (per-document .md "
        "and .json, and .pdf where asked, summary.json, report.json), under an allowed URI.",
    )
    result_urls: dict[str, str] = Field(
        default_factory=dict,
        max_length=10_000,
        description="Pre-signed PUT URLs the results are sent to when the job ends, by file "
        "name (`<document>.md`, `<document>.json`, `<document>.pdf` where asked, "
        "`summary.json`, `report.json`); a file without a URL is not sent.",
    )
