"""A job's results read from the database, and written as Markdown/JSON files."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app.db import attempts, documents, jobs
from app.db.engine import Database
from app.db.models import Document, Page
from app.domain import AttemptStatus, DocumentStatus, PageStatus, page_outcome
from app.jobs.result_files import SUMMARY, FileDigest, digest_of, recorded_files, still_whole
from app.searchable.writer import PageText, PdfNotWritten, SearchablePdfWriter
from app.storage.targets import ResultTarget, folder_target
from app.textlayer.plain import plain_text

_MARKDOWN = "text/markdown; charset=utf-8"
_JSON = "application/json"
_PDF = "application/pdf"
# Fields a document's result carries for writing its files, not part of its JSON.
_INTERNAL = ("reuses_files", "sha256", "etag")
_JOB_FILES = ("summary", "report")  # summary.json, report.json (and .html in the upload folder)
# A file name holds at most 255 bytes: room for `.json`, a `-NN`, and the upload folder's
# `.reason.txt`. An S3 key holds 1,024 bytes, but the same names go to local folders too.
_MAX_FILE_BYTES = 200
# Control characters, path separators, and lone surrogates (a file name that was not UTF-8).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\\ud800-\udfff]")


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
    plain_text: str | None = None  # `text` (Markdown) without its markup
    outcome: str | None = None  # ok, fallback, degenerate, failed (see domain.page_outcome)
    retryable: bool | None = None  # for a page without text: whether a new try may help
    positions: dict[str, Any] | None = None  # word and line boxes, where the engine gives them
    # Structured fields the model's answer carried beside the text (olmOCR's language,
    # rotation, table and diagram flags; a layout's cells), from the accepted attempt.
    fields: dict[str, Any] | None = None


@dataclass(frozen=True)
class DocumentResult:
    name: str
    path: str
    status: str
    page_count: int
    error_category: str | None
    error: str | None
    pages: list[PageResult] = field(default_factory=list)
    # A skipped document's pages are those of the earlier job that did it (same content, same
    # output folder), so a rerun's results describe the whole folder, not only what it redid.
    done_in_job: str | None = None
    # What its result files are called (`<file>.md`, `<file>.json`): its name made safe as a
    # file or key name, unique in the job and never the job's own `summary` or `report`.
    file: str = ""
    # The earlier job wrote this document's files under this very name, from this very path:
    # a rerun may leave them as they are. Not part of its JSON.
    reuses_files: bool = False
    # The original's identity, to read it again for its searchable PDF. Not part of its JSON.
    sha256: str | None = None
    etag: str | None = None


@dataclass(frozen=True)
class JobResults:
    job_id: str
    status: str
    plan: str
    source: str
    documents: list[DocumentResult]
    pdf: bool = False  # the job asked for a searchable PDF per document

    def page_counts(self) -> Counter[str]:
        return Counter(p.status for d in self.documents for p in d.pages)

    def document_counts(self) -> Counter[str]:
        return Counter(d.status for d in self.documents)

    @property
    def skipped(self) -> list[DocumentResult]:
        return [d for d in self.documents if d.status == DocumentStatus.SKIPPED]

    @property
    def nothing_to_do(self) -> bool:
        """Every document was already done by an earlier job."""
        return bool(self.documents) and len(self.skipped) == len(self.documents)

    @property
    def all_pages_have_output(self) -> bool:
        failed_docs = self.document_counts()[DocumentStatus.FAILED]
        return failed_docs == 0 and self.page_counts()[PageStatus.FAILED] == 0


def load_results(db: Database, job_id: str) -> JobResults:
    with db.session() as session:
        job = jobs.get_job(session, job_id)
        found = documents.documents_with_pages(session, job_id)
        earlier = {
            d.id: done
            for d in found
            if d.status == DocumentStatus.SKIPPED
            and (done := documents.skipped_for(session, d, job)) is not None
        }
        job_ids = {job_id} | {e.job_id for e in earlier.values()}
        totals = attempts.totals_by_page(session, job_ids)
        answers = _answers(attempts.answers(session, job_ids))
        files = result_files([d.name for d in found])
        docs = [
            _document_result(d, earlier.get(d.id), totals, answers, file)
            for d, file in zip(found, files, strict=True)
        ]
        asked = bool((job.options or {}).get("pdf"))
        return JobResults(job.id, job.status, job.plan_name, job.source, docs, pdf=asked)


def result_files(names: list[str]) -> list[str]:
    """Each document's result file name (without `.md`/`.json`): its name with no character a
    file or key name cannot hold, at most `_MAX_FILE_BYTES` bytes, unique in the job (any
    case) and never one of the job's own files (`summary`, `report`)."""
    taken = set(_JOB_FILES)
    files = []
    for name in names:
        base = _fitted(_UNSAFE.sub("_", name).strip() or "document")
        file, n = base, 1
        while file.lower() in taken:
            n += 1
            file = f"{base}-{n}"
        taken.add(file.lower())
        files.append(file)
    return files


def _fitted(name: str) -> str:
    """`name` cut to `_MAX_FILE_BYTES` of UTF-8, with a digest of the whole so cuts differ."""
    data = name.encode("utf-8", "surrogatepass")
    if len(data) <= _MAX_FILE_BYTES:
        return name
    digest = hashlib.sha256(data).hexdigest()[:12]
    head = data[: _MAX_FILE_BYTES - 13].decode("utf-8", "ignore")
    return f"{head}~{digest}"


@dataclass(frozen=True)
class _Answer:
    """What a page's accepted answer carried beside its text."""

    positions: dict[str, Any] | None = None  # word and line boxes, where its engine gave them
    fields: dict[str, Any] | None = None  # the model's structured fields (olmOCR's, ...)


def _answers(rows: list[tuple[int, str, Any, Any]]) -> dict[int, _Answer]:
    """Each page's answer positions and fields, from the attempts that answered, in order."""
    answers: dict[int, _Answer] = {}
    for page_id, status, positions, fields in rows:
        known = answers.get(page_id, _Answer())
        answers[page_id] = _Answer(
            positions=positions or known.positions,
            fields=(fields if status == AttemptStatus.OK and fields else None) or known.fields,
        )
    return answers


def _page_result(page: Page, totals: dict[int, tuple[int, float]], answer: _Answer) -> PageResult:
    tried, seconds = totals.get(page.id, (0, 0.0))
    outcome, retryable = page_outcome(page.status, page.failure_category)
    return PageResult(
        number=page.number,
        status=page.status,
        engine=page.final_engine,
        step=page.final_step,
        text=page.text,
        failure_category=page.failure_category,
        error=page.error,
        attempts=tried,
        engine_seconds=round(seconds, 4),
        render_seconds=page.render_s,
        plain_text=None if page.text is None else plain_text(page.text),
        outcome=outcome.value,
        retryable=retryable,
        positions=answer.positions if page.final_engine else None,
        fields=answer.fields,
    )


def _document_result(
    document: Document,
    earlier: Document | None,
    totals: dict[int, tuple[int, float]],
    answers: dict[int, _Answer],
    file: str,
) -> DocumentResult:
    pages = [
        _page_result(p, totals, answers.get(p.id, _Answer())) for p in (earlier or document).pages
    ]
    return DocumentResult(
        document.name,
        document.path,
        document.status,
        document.page_count,
        document.error_category,
        document.error,
        pages,
        done_in_job=earlier.job_id if earlier else None,
        file=file,
        reuses_files=(
            earlier is not None and (earlier.name, earlier.path) == (document.name, document.path)
        ),
        sha256=document.sha256,
        etag=document.etag,
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


def write_outputs(
    results: JobResults, out: Path | ResultTarget, pdfs: SearchablePdfWriter | None = None
) -> dict[str, str]:
    """`<name>.md` and `<name>.json` per document with pages, and `summary.json` for the job,
    into a folder or any other target (a store's prefix, pre-signed URLs); `<name>.pdf` too
    where the job asked for searchable PDFs, written by `pdfs`. Each file is written whole
    (`ResultTarget.put`), and `summary.json`, written last, records each one's size and
    SHA-256 (`result_files.py`).

    A skipped document's files are written only where they are missing (e.g. `folio results`
    into a new folder), another document's, or no longer the bytes the earlier job recorded
    (cut short by a full disk, changed since): in the folder it was skipped for, under the
    same name from the same path, and whole, they are the earlier job's own.

    Returns why a document asked for has no PDF, by document file (also in `summary.json`):
    a PDF that could not be written costs no other file.
    """
    target = folder_target(out) if isinstance(out, Path) else out
    reusing = any(d.status == DocumentStatus.SKIPPED and d.reuses_files for d in results.documents)
    earlier = recorded_files(target) if reusing else {}
    files: dict[str, dict[str, FileDigest]] = {}
    reasons: dict[str, str] = {}
    for document in results.documents:
        if document.status == DocumentStatus.FAILED or not document.pages:
            if results.pdf:
                reasons[document.file] = "the document has no pages read"
            continue
        names = [f"{document.file}.md", f"{document.file}.json"]
        names += [f"{document.file}.pdf"] if results.pdf else []
        reusable = document.status == DocumentStatus.SKIPPED and document.reuses_files
        if reusable and all(still_whole(target, n, earlier.get(n)) for n in names):
            files[document.file] = {n: earlier[n] for n in names}
            continue
        fields = {k: v for k, v in asdict(document).items() if k not in _INTERNAL}
        markdown = render_markdown(document).encode()
        payload = json.dumps(fields, ensure_ascii=False, indent=2).encode()
        target.put(names[0], markdown, _MARKDOWN)
        target.put(names[1], payload, _JSON)
        files[document.file] = {names[0]: digest_of(markdown), names[1]: digest_of(payload)}
        if results.pdf:
            pdf, reason = _write_pdf(document, target, names[2], pdfs)
            if reason:
                reasons[document.file] = reason
            if pdf is not None:
                files[document.file][names[2]] = digest_of(pdf)
    summary = json.dumps(summary_of(results, files, reasons), ensure_ascii=False, indent=2)
    target.put(SUMMARY, summary.encode(), _JSON)
    return reasons


def _write_pdf(
    document: DocumentResult, target: ResultTarget, name: str, pdfs: SearchablePdfWriter | None
) -> tuple[bytes | None, str | None]:
    """The document's searchable PDF put in `target` (its bytes); why not, where it could not
    be."""
    if pdfs is None:
        return None, "no PDF writer was given for this job's results"
    pages = [PageText(p.number, p.engine, p.text, p.positions) for p in document.pages]
    try:
        data = pdfs.write(document.path, document.sha256, document.etag, pages)
    except PdfNotWritten as exc:
        return None, str(exc)
    target.put(name, data, _PDF)
    return data, None


def publish(
    results: JobResults,
    report_json: str,
    target: ResultTarget,
    pdfs: SearchablePdfWriter | None = None,
) -> None:
    """`write_outputs` plus the job's report (`report.json`), for a target elsewhere than a
    local folder: a downstream reader of a bucket gets the whole job there."""
    write_outputs(results, target, pdfs)
    target.put("report.json", report_json.encode(), _JSON)


def summary_of(
    results: JobResults,
    files: dict[str, dict[str, FileDigest]] | None = None,
    pdf_reasons: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The job's state as `summary.json` holds it; skipped documents count as done earlier.
    `files`: by document file, the size and SHA-256 of each result file written for it.
    Where the job asked for searchable PDFs, each document says its `.pdf` or why it has none
    (`pdf_reasons`, by document file)."""
    pages, docs = results.page_counts(), results.document_counts()
    skipped = results.skipped
    summary: dict[str, Any] = {
        "job_id": results.job_id,
        "status": results.status,
        "plan": results.plan,
        "source": results.source,
        "documents_total": len(results.documents),
        "documents_done": docs[DocumentStatus.DONE] + len(skipped),
        "documents_partial": docs[DocumentStatus.PARTIAL],
        "documents_failed": docs[DocumentStatus.FAILED],
        "documents_skipped": len(skipped),
        "pages_total": sum(pages.values()),
        "pages_succeeded": pages[PageStatus.SUCCEEDED],
        "pages_fallback": pages[PageStatus.FALLBACK],
        "pages_failed": pages[PageStatus.FAILED],
    }
    if skipped:
        earlier = sorted({d.done_in_job for d in skipped if d.done_in_job})
        summary["rerun_note"] = (
            f"{len(skipped)} of {len(results.documents)} documents were already done in this "
            f"folder by earlier jobs ({', '.join(earlier)}) and were skipped; they count as done "
            "here, with their pages as those jobs left them (see each document's done_in_job)."
        )
    written = files or {}
    summary["documents"] = [_document_summary(d, written.get(d.file)) for d in results.documents]
    if results.pdf:
        for entry, document in zip(summary["documents"], results.documents, strict=True):
            reason = (pdf_reasons or {}).get(document.file)
            entry["pdf"] = None if reason else f"{document.file}.pdf"
            entry["pdf_error"] = reason
    return summary


def _document_summary(
    document: DocumentResult, files: dict[str, FileDigest] | None
) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "name": document.name,
        "file": document.file,
        "path": document.path,
        "status": document.status,
        "pages": document.page_count,
        "error_category": document.error_category,
        "error": document.error,
        "done_in_job": document.done_in_job,
        "failed_pages": [
            {
                "page": p.number,
                "outcome": p.outcome,
                "category": p.failure_category,
                "retryable": p.retryable,
                "error": p.error,
            }
            for p in document.pages
            if p.status == PageStatus.FAILED
        ],
    }
    if files:  # what was written for it, as written: a rerun checks these before it skips
        summary["files"] = {name: digest.as_json() for name, digest in files.items()}
    return summary
