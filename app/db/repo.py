"""Data access for the pipeline: every write the pipeline makes goes through these functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.db.models import Attempt, Document, Job, Page, ServerSample, utcnow
from app.domain import (
    TERMINAL_PAGE_STATUSES,
    AttemptRole,
    AttemptStatus,
    DocumentStatus,
    EngineResult,
    Executor,
    JobStatus,
    PageStatus,
)
from app.retry.plan import PastAttempt, loop_stop
from app.settings import PlanStep

if TYPE_CHECKING:  # a plain dataclass; the reader's HTTP stays out of the data layer
    from app.servermetrics.counters import ServerCounters


@dataclass(frozen=True)
class PageWork:
    """What processing a page needs to know, read in one go."""

    page_id: int
    job_id: str
    number: int
    path: str
    plan_name: str
    options: dict[str, Any]
    etag: str | None = None  # the stored object's, when `path` is its s3:// URI
    sha256: str | None = None  # what the document's bytes hash to, recorded at ingest


def create_job(
    session: Session, source: str, out_dir: str | None, plan_name: str, **extra: Any
) -> Job:
    job = Job(
        status=JobStatus.PENDING, source=source, out_dir=out_dir, plan_name=plan_name, **extra
    )
    session.add(job)
    session.flush()
    return job


def find_done_document(
    session: Session, sha256: str, out_dir: str, before_id: int | None = None
) -> Document | None:
    """A finished document with this content, written to the same output folder.

    `before_id` finds the one a skipped document was skipped for: the newest done before it.
    """
    query = (
        select(Document)
        .join(Job)
        .where(Document.sha256 == sha256, Document.status == DocumentStatus.DONE)
        .where(Job.out_dir == out_dir)
        .order_by(Document.id.desc())
    )
    if before_id is not None:
        query = query.where(Document.id < before_id)
    return session.scalars(query).first()


def history(session: Session, page_id: int) -> list[PastAttempt]:
    rows = session.scalars(select(Attempt).where(Attempt.page_id == page_id).order_by(Attempt.id))
    return [
        PastAttempt(
            a.step_index,
            AttemptStatus(a.status),
            a.completion_tokens or 0,
            (a.verdict_kind, a.verdict_period or 0) if a.verdict_kind else None,
            loop_stop(
                a.verdict_kind,
                a.verdict_onset,
                a.output,
                a.aborted,
                a.finish_reason,
                a.verdict_period,
            ),
            a.role == AttemptRole.CONFIRM,
        )
        for a in rows
    ]


def attempt_output(session: Session, page_id: int, step_index: int) -> str | None:
    """The text of the page's latest attempt at a step."""
    query = select(Attempt.output).where(Attempt.page_id == page_id)
    query = query.where(Attempt.step_index == step_index).order_by(Attempt.id.desc())
    return session.scalars(query).first()


def attempt_row(
    work: PageWork, step_index: int, step: PlanStep, result: EngineResult
) -> dict[str, Any]:
    """An attempt's column values: one model call, its parameters, tokens, timings, verdict."""
    verdict = result.verdict
    return {
        "job_id": work.job_id,
        "page_id": work.page_id,
        "step_index": step_index,
        "step_name": step.name,
        "engine": step.engine,
        "model": result.model,
        "endpoint": result.endpoint,
        "params": result.params or step.sampling(),
        "prompt_version": result.prompt_version,
        "status": result.status,
        "started_at": result.started_at,
        "ended_at": result.ended_at,
        "duration_s": result.duration_s,
        "ttft_s": result.ttft_s,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "tokens_estimated": result.tokens_estimated,
        "max_tokens": result.max_tokens,
        "finish_reason": result.finish_reason,
        "verdict_kind": verdict.kind if verdict else None,
        "verdict_period": verdict.period if verdict else None,
        "verdict_onset": verdict.onset if verdict else None,
        "aborted": result.aborted,
        "stop_mechanism": result.stop_mechanism,
        "tokens_after_verdict": result.tokens_after_verdict,
        "tokens_after_verdict_note": result.tokens_after_verdict_note,
        "output": result.text,
        "output_chars": len(result.text),
        "invalid_reason": result.invalid_reason,
        "answer_fields": result.answer_fields or None,
        "error": result.error,
        "positions": result.positions,
        "role": result.role,
    }


def finish_page(
    session: Session,
    page_id: int,
    status: PageStatus,
    *,
    text: str | None = None,
    engine: str | None = None,
    step: str | None = None,
    failure_category: str | None = None,
    error: str | None = None,
) -> None:
    """Move a page to a terminal status; a page already terminal keeps its first outcome."""
    session.execute(
        update(Page)
        .where(Page.id == page_id, Page.status.not_in(TERMINAL_PAGE_STATUSES))
        .values(
            status=status,
            text=text,
            final_engine=engine,
            final_step=step,
            failure_category=failure_category,
            error=error,
            finished_at=datetime.now(UTC),
            lease_owner=None,
            lease_until=None,
        )
    )


def settle_document(session: Session, document_id: int) -> DocumentStatus | None:
    """Give a document its final status once all its pages are terminal."""
    statuses = list(session.scalars(select(Page.status).where(Page.document_id == document_id)))
    if not statuses or any(s not in TERMINAL_PAGE_STATUSES for s in statuses):
        return None
    failed = statuses.count(PageStatus.FAILED)
    shared = _shared_store_failure(session, document_id) if failed == len(statuses) else None
    status = (
        DocumentStatus.DONE
        if failed == 0
        else DocumentStatus.FAILED
        if failed == len(statuses)
        else DocumentStatus.PARTIAL
    )
    error = f"{failed} of {len(statuses)} pages failed" if failed else None
    session.execute(
        update(Document)
        .where(Document.id == document_id)
        .values(
            status=status,
            error=shared[1] if shared else error,
            error_category=shared[0] if shared else ("pages" if failed else None),
            finished_at=datetime.now(UTC),
        )
    )
    return status


# Failures of the document's object, not of its pages: the document carries them as its own.
STORE_FAILURES = frozenset(
    {"object_changed", "object_missing", "access_denied", "bucket_missing", "too_large"}
)


def _shared_store_failure(session: Session, document_id: int) -> tuple[str, str] | None:
    """(category, error) when every page failed for the same reason of the object store."""
    rows = set(
        session.execute(
            select(Page.failure_category, Page.error).where(Page.document_id == document_id)
        ).tuples()
    )
    categories = {category for category, _ in rows}
    if len(categories) != 1 or not categories <= STORE_FAILURES:
        return None
    category, error = sorted(rows, key=lambda row: row[1] or "")[0]
    return category or "", error or ""


def open_pages(session: Session, job_id: str) -> list[int]:
    """Ids of the job's pages that are not terminal yet."""
    query = select(Page.id).where(Page.job_id == job_id)
    query = query.where(Page.status.not_in(TERMINAL_PAGE_STATUSES)).order_by(Page.id)
    return list(session.scalars(query))


def pages_with_documents(session: Session, job_ids: Sequence[str]) -> list[tuple[Page, Document]]:
    """The jobs' pages, each with its document, in page order (their attempts load lazily)."""
    query = (
        select(Page, Document)
        .join(Document, Page.document_id == Document.id)
        .where(Page.job_id.in_(job_ids))
        .order_by(Page.id)
    )
    return [(page, document) for page, document in session.execute(query)]


def count_pages_by_status(session: Session, job_id: str) -> dict[str, int]:
    """The job's pages counted per status."""
    query = select(Page.status, func.count()).where(Page.job_id == job_id).group_by(Page.status)
    return {status: int(n) for status, n in session.execute(query)}


def loop_stops_by_endpoint(session: Session, job_id: str) -> dict[str, str]:
    """Per endpoint, the loop stop its latest attempt in the job relied on, and what the
    start-up probes found: the stops, and whether a closed stream stops the server's work
    (the attempt's params, recorded by the VLM engine)."""
    latest = (
        select(Attempt.endpoint, func.max(Attempt.id))
        .where(Attempt.job_id == job_id, Attempt.endpoint.is_not(None))
        .group_by(Attempt.endpoint)
    )
    ids = [attempt_id for _, attempt_id in session.execute(latest)]
    found: dict[str, str] = {}
    for endpoint, params in session.execute(
        select(Attempt.endpoint, Attempt.params).where(Attempt.id.in_(ids))
    ):
        if endpoint and params and params.get("loop_stop"):
            notes = [params.get(key) for key in ("loop_stop_probe", "loop_stop_close_probe")]
            said = "; ".join(str(note) for note in notes if note)
            found[endpoint] = params["loop_stop"] + (f" ({said})" if said else "")
    return found


def job_plan(session: Session, job_id: str) -> str:
    plan = session.scalar(select(Job.plan_name).where(Job.id == job_id))
    if plan is None:
        raise KeyError(f"no job {job_id!r}")
    return plan


def mark_job_running(session: Session, job_id: str, executor: Executor) -> None:
    """The job runs now, on `executor` (kept in its options, so no schema change: the
    lost-task check must know which jobs Celery runs)."""
    set_job_status(session, job_id, JobStatus.RUNNING)
    set_job_executor(session, job_id, executor)


def set_job_executor(session: Session, job_id: str, executor: Executor) -> None:
    options = session.scalar(select(Job.options).where(Job.id == job_id)) or {}
    executed = {**options, "executor": executor.value}
    session.execute(update(Job).where(Job.id == job_id).values(options=executed))


def set_job_status(session: Session, job_id: str, status: JobStatus) -> None:
    values: dict[str, Any] = {"status": status}
    now = datetime.now(UTC)
    if status == JobStatus.RUNNING:
        values["started_at"] = func.coalesce(Job.started_at, now)
    if status in (JobStatus.DONE, JobStatus.CANCELLED):
        values["finished_at"] = now
    query = update(Job).where(Job.id == job_id)
    if status != JobStatus.CANCELLED:
        # A cancelled job stays cancelled, whatever its in-flight pages do afterwards.
        query = query.where(Job.status != JobStatus.CANCELLED)
    session.execute(query.values(**values))


def release_leases(session: Session, job_id: str) -> int:
    """Free the job's running pages for a new owner (their holder is known to be gone)."""
    result = session.execute(
        update(Page)
        .where(Page.job_id == job_id, Page.status == PageStatus.RUNNING)
        .values(status=PageStatus.PENDING, lease_owner=None, lease_until=None)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def latest_job_for_source(session: Session, source: str) -> str | None:
    """The id of the newest job made from `source`."""
    query = select(Job.id).where(Job.source == source).order_by(Job.created_at.desc())
    return session.scalars(query).first()


def record_server_sample(
    session: Session,
    job_id: str,
    endpoint: str,
    metrics_url: str,
    worker: str,
    phase: str,
    counters: ServerCounters | None,
    error: str | None = None,
) -> None:
    """Store a server reading; a worker's `end` reading replaces its previous one."""
    sample = session.scalar(
        select(ServerSample).where(
            ServerSample.job_id == job_id,
            ServerSample.endpoint == endpoint,
            ServerSample.worker == worker,
            ServerSample.phase == phase,
        )
    )
    if sample is None:
        sample = ServerSample(
            job_id=job_id, endpoint=endpoint, metrics_url=metrics_url, worker=worker, phase=phase
        )
        session.add(sample)
    sample.taken_at = utcnow()
    sample.error = error
    sample.generation_tokens = counters.generation_tokens if counters else None
    sample.prompt_tokens = counters.prompt_tokens if counters else None
    sample.requests = counters.requests if counters else None
    sample.server_started = counters.started if counters else None


def find_done_object(
    session: Session,
    uri: str,
    etag: str,
    out_dir: str,
    before_id: int | None = None,
    api_key_id: int | None = None,
) -> Document | None:
    """A finished document read from this stored object (same URI, same ETag), whose results
    went to the same place for the same owner (an API key, or none for the CLI's jobs): a
    rerun skips it without fetching it again, and never learns of another key's jobs."""
    owner = Job.api_key_id.is_(None) if api_key_id is None else Job.api_key_id == api_key_id
    query = (
        select(Document)
        .join(Job)
        .where(Document.etag == etag, Document.path == uri)
        .where(Document.status == DocumentStatus.DONE, Job.out_dir == out_dir, owner)
        .order_by(Document.id.desc())
    )
    if before_id is not None:
        query = query.where(Document.id < before_id)
    return session.scalars(query).first()
