"""The schema: jobs hold documents, documents hold pages, pages hold attempts."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy import (
    text as sql_text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def new_id() -> str:
    return uuid.uuid4().hex


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSON,
        datetime: DateTime(timezone=True),
    }


class ApiKey(Base):
    """A REST API client. Only the token's SHA-256 is stored; the token is shown once."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]
    # The key's default callback, and the secret its webhooks are signed with (HMAC-SHA256;
    # kept in clear: the server must sign with it, and the key's holder reads it back).
    webhook_url: Mapped[str | None] = mapped_column(Text)
    webhook_page_events: Mapped[bool] = mapped_column(Boolean, default=False)
    webhook_secret: Mapped[str | None] = mapped_column(String(80))
    # A rotation's grace: the token and the secret the key had before, honoured (the token)
    # and signed with beside the new one (the secret) until these moments (app/db/keys.py).
    previous_token_sha256: Mapped[str | None] = mapped_column(String(64), index=True)
    previous_token_until: Mapped[datetime | None]
    previous_webhook_secret: Mapped[str | None] = mapped_column(String(80))
    previous_webhook_secret_until: Mapped[datetime | None]


class Job(Base):
    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    status: Mapped[str] = mapped_column(String(16), index=True)
    source: Mapped[str] = mapped_column(Text)
    out_dir: Mapped[str | None] = mapped_column(Text)
    plan_name: Mapped[str] = mapped_column(String(64))
    owner: Mapped[str | None] = mapped_column(String(64), index=True)
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    api_key_id: Mapped[int | None] = mapped_column(
        ForeignKey("api_keys.id", ondelete="SET NULL"), index=True
    )

    documents: Mapped[list[Document]] = relationship(back_populates="job", order_by="Document.id")


class Document(Base):
    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("job_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    # A local path, or the object's URI (s3://bucket/key) when it lives in a store.
    path: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str | None] = mapped_column(String(64), index=True)
    # A stored object's identity as listed: its ETag, and its version where the bucket keeps
    # them. Workers read exactly that content; a rerun skips it when it is done already.
    etag: Mapped[str | None] = mapped_column(String(200), index=True)
    version_id: Mapped[str | None] = mapped_column(String(200))
    size_bytes: Mapped[int] = mapped_column(Integer, default=0)
    page_count: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), index=True)
    error_category: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]

    job: Mapped[Job] = relationship(back_populates="documents")
    pages: Mapped[list[Page]] = relationship(back_populates="document", order_by="Page.number")


class Page(Base):
    __tablename__ = "pages"
    __table_args__ = (
        UniqueConstraint("document_id", "number"),
        # Only open pages: "is the job done?" stays one index probe at any job size.
        Index(
            "ix_pages_open_by_job",
            "job_id",
            postgresql_where=sql_text("status IN ('pending', 'running')"),
            sqlite_where=sql_text("status IN ('pending', 'running')"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    number: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), index=True)
    failure_category: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    final_engine: Mapped[str | None] = mapped_column(String(32))
    final_step: Mapped[str | None] = mapped_column(String(64))
    has_text_layer: Mapped[bool | None] = mapped_column(Boolean)
    width: Mapped[int | None] = mapped_column(Integer)
    height: Mapped[int | None] = mapped_column(Integer)
    render_s: Mapped[float | None] = mapped_column(Float)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]

    document: Mapped[Document] = relationship(back_populates="pages")
    attempts: Mapped[list[Attempt]] = relationship(back_populates="page", order_by="Attempt.id")


class Attempt(Base):
    __tablename__ = "attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    page_id: Mapped[int] = mapped_column(ForeignKey("pages.id", ondelete="CASCADE"), index=True)
    step_index: Mapped[int] = mapped_column(Integer)
    step_name: Mapped[str] = mapped_column(String(64))
    engine: Mapped[str] = mapped_column(String(32))
    model: Mapped[str | None] = mapped_column(String(200))
    endpoint: Mapped[str | None] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    prompt_version: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(20), index=True)
    started_at: Mapped[datetime]
    ended_at: Mapped[datetime]
    duration_s: Mapped[float] = mapped_column(Float)
    ttft_s: Mapped[float | None] = mapped_column(Float)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    tokens_estimated: Mapped[bool] = mapped_column(Boolean, default=False)
    max_tokens: Mapped[int | None] = mapped_column(Integer)
    finish_reason: Mapped[str | None] = mapped_column(String(32))
    verdict_kind: Mapped[str | None] = mapped_column(String(16))
    verdict_period: Mapped[int | None] = mapped_column(Integer)
    verdict_onset: Mapped[int | None] = mapped_column(Integer)
    aborted: Mapped[bool] = mapped_column(Boolean, default=False)
    # engine_plugin, abort_call, server_repetition, client_close or none (EngineResult)
    stop_mechanism: Mapped[str | None] = mapped_column(String(32))
    tokens_after_verdict: Mapped[int | None] = mapped_column(Integer)
    tokens_after_verdict_note: Mapped[str | None] = mapped_column(String(200))
    output: Mapped[str | None] = mapped_column(Text)
    # Why an answer was refused (status invalid): truncated, unparseable, missing end text.
    invalid_reason: Mapped[str | None] = mapped_column(String(32))
    # A valid answer's structured fields beside its Markdown (olmOCR's front matter, ...).
    answer_fields: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    output_chars: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    # Word and line boxes where the engine gives them (text layer, Tesseract): app.positions.
    positions: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Why the attempt ran beside its plan step: "confirm" (app.domain.AttemptRole), or null.
    role: Mapped[str | None] = mapped_column(String(16))

    page: Mapped[Page] = relationship(back_populates="attempts")


class ServerSample(Base):
    """A reading of an endpoint server's counters (vLLM's /metrics) for one job, taken by one
    worker: its first (`phase` start, before its first page of the job) and its latest (`phase`
    end, after each page). `server_started` tells server instances apart (a restart, or one
    server per worker behind the same URL); `error` says why a reading failed."""

    __tablename__ = "server_samples"
    __table_args__ = (UniqueConstraint("job_id", "endpoint", "worker", "phase"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    endpoint: Mapped[str] = mapped_column(String(200))
    metrics_url: Mapped[str] = mapped_column(Text)
    worker: Mapped[str] = mapped_column(String(200))
    phase: Mapped[str] = mapped_column(String(8))
    taken_at: Mapped[datetime] = mapped_column(default=utcnow)
    generation_tokens: Mapped[float | None] = mapped_column(Float)
    prompt_tokens: Mapped[float | None] = mapped_column(Float)
    requests: Mapped[float | None] = mapped_column(Float)
    server_started: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)


class WebhookDelivery(Base):
    """One event for one callback URL: an outbox row, sent until it is delivered or its
    retries run out. `dedupe_key` makes the row once per event, whichever process saw it."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_due", "status", "next_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    api_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(32))
    event_id: Mapped[str] = mapped_column(String(32), default=new_id)
    dedupe_key: Mapped[str] = mapped_column(String(120), unique=True)
    url: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(16))  # pending, delivered, failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    next_at: Mapped[datetime] = mapped_column(default=utcnow)
    lease_until: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]

    tries: Mapped[list[WebhookAttempt]] = relationship(order_by="WebhookAttempt.id")


class WebhookAttempt(Base):
    """One HTTP request of a delivery: what the receiver answered, and how fast."""

    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    delivery_id: Mapped[int] = mapped_column(
        ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), index=True
    )
    attempted_at: Mapped[datetime] = mapped_column(default=utcnow)
    status_code: Mapped[int | None] = mapped_column(Integer)
    latency_s: Mapped[float] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)
