"""The upload folder: files that stop growing in INBOX become one job per batch window.

A batch is claimed by renaming its files into `processing/<batch>/` (atomic on one file
system), so a file is in exactly one place at any time. The job's `source` is that folder:
after a crash, `recover` finds the job again (or makes it, when the crash came before), runs
what is left, writes the outbox and moves the originals to `done/` or `failed/`.
"""

from __future__ import annotations

import fcntl
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from app.db import documents, jobs, pages
from app.db.engine import DATABASE_DOWN, Database
from app.domain import DocumentStatus
from app.jobs import document_limits, run_job_locally, settle_job
from app.jobs.inbox_files import (
    StableFiles,
    claimed_name,
    free_name,
    move_to,
    unique_names,
)
from app.jobs.results import DocumentResult, JobResults, load_results, write_outputs
from app.pipeline.ingest import JobFields, ingest_files
from app.pipeline.ingest_rows import sha256_of
from app.pipeline.local import PageCallback
from app.report.build import build_report
from app.report.render import ReportFormat, render_report
from app.searchable.factory import searchable_writer
from app.settings import Settings

PARTIAL_SUFFIXES = (".part", ".tmp", ".crdownload", ".partial")
MAX_BATCH_TRIES = 3  # runs of a batch that failed as a whole before its files are given up
_TRIES_FILE = ".folio-tries"
log = logging.getLogger(__name__)
Progress = Callable[[int, str], AbstractContextManager[PageCallback | None]]


class InboxBusy(Exception):
    """Another `folio watch` holds this inbox."""


@dataclass(frozen=True)
class BatchOutcome:
    batch: str
    job_id: str
    done: list[str]
    failed: dict[str, str]
    outbox: Path


@contextmanager
def inbox_lock(inbox: Path) -> Iterator[None]:
    """One watcher per inbox: a second one would race the first for the same files."""
    inbox.mkdir(parents=True, exist_ok=True)
    with (inbox / ".folio-watch.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise InboxBusy(f"another `folio watch` is watching {inbox}") from exc
        yield


class Watcher:
    """Gathers stable files into batches and runs each as a job in this process."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        inbox: Path,
        outbox: Path,
        clock: Callable[[], float] = time.monotonic,
        progress: Progress | None = None,
    ) -> None:
        self.settings, self.db, self.clock = settings, db, clock
        self.inbox, self.outbox = inbox, outbox
        self.processing, self.done, self.failed = (
            inbox / n for n in ("processing", "done", "failed")
        )
        self.progress: Progress = progress or (lambda _total, _label: nullcontext(None))
        self._stable = StableFiles()
        self._window_opened: float | None = None
        self._unfinished = False  # a batch failed to run and waits in processing/ for a retry

    def recover(self) -> list[BatchOutcome]:
        """Finish the batches a previous run (or an earlier try of this one) had claimed but
        not finished; a batch that failed `MAX_BATCH_TRIES` times gives its files up to
        failed/ with the error, so no file can hold the folder up for good."""
        if not self.processing.is_dir():
            return []
        batches = [d for d in sorted(self.processing.iterdir()) if d.is_dir()]
        return [o for d in batches if (o := self._finish_or_count(d)) is not None]

    def retry(self) -> list[BatchOutcome]:
        """The batches whose run failed since the last look, tried again (see `recover`)."""
        if not self._unfinished:
            return []
        self._unfinished = False
        return self.recover()

    def tick(self, close_window: bool = False) -> BatchOutcome | None:
        """One look at the inbox; runs a batch when its window has closed (or `close_window`).
        A batch whose run fails stays in processing/ for `retry`."""
        stable = self._stable.look(self._arrivals())
        if stable and self._window_opened is None:
            self._window_opened = self.clock()
        if self._window_opened is None:
            return None
        open_for = self.clock() - self._window_opened
        if open_for < self.settings.watch_window_s and not close_window:
            return None
        self._window_opened = None
        batch = self._claim(stable)
        return self._finish_or_count(batch) if batch else None

    def _finish_or_count(self, batch: Path) -> BatchOutcome | None:
        """`finish`, at the watcher's edge: a failure is logged and counted on the batch, and
        the batch tried again later; at its last try its files go to failed/ with the error.
        A database outage is not the files' fault: the batch waits for it, uncounted."""
        try:
            return self.finish(batch)
        except DATABASE_DOWN as exc:
            log.warning("batch %s waits for the database: %s", batch.name, exc)
            self._unfinished = True
            return None
        except Exception as exc:
            reason = f"the batch failed to run: {type(exc).__name__}: {exc}"
            log.exception("batch %s failed to run", batch.name)
            tries = _count_try(batch)
            if tries < MAX_BATCH_TRIES:
                self._unfinished = True
                return None
            return self._give_up(batch, reason)

    def _give_up(self, batch: Path, reason: str) -> BatchOutcome:
        outcome = BatchOutcome(batch.name, "", [], {}, self.outbox / batch.name)
        for path in _originals(batch):
            move_to(path, self.failed, reason)
            outcome.failed[path.name] = reason
        _remove_batch(batch)
        return outcome

    def _arrivals(self) -> list[Path]:
        self._free_own_names()
        return [
            p
            for p in self.inbox.iterdir()
            if (p.is_symlink() or p.is_file())
            and not p.name.startswith(".")
            and not p.name.endswith(PARTIAL_SUFFIXES)
        ]

    def _free_own_names(self) -> None:
        """A file dropped under the name of one of the watcher's own folders (`processing`,
        `done`, `failed`, an outbox inside the inbox) would stop every batch: it is renamed
        (`done.pdf` -> `done-file-<hex>.pdf`) and taken as any other file."""
        for folder in (self.processing, self.done, self.failed, self.outbox):
            if folder.parent == self.inbox and (folder.is_symlink() or folder.is_file()):
                folder.rename(self.inbox / f"{folder.name}-file-{uuid.uuid4().hex[:8]}")

    def _claim(self, files: list[Path]) -> Path | None:
        """Move `files` into a new batch folder, each under a name that every later step can
        write (see `claimed_name`); a symbolic link goes to failed/ unfollowed."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        batch = self.processing / f"{stamp}-{uuid.uuid4().hex[:8]}"
        batch.mkdir(parents=True)
        for path in files:
            try:
                if path.is_symlink():
                    move_to(path, self.failed, "a symbolic link: the upload folder takes files")
                else:
                    path.rename(free_name(batch, claimed_name(path.name)))
            except FileNotFoundError:
                continue  # gone since we looked
        if not any(batch.iterdir()):
            batch.rmdir()
            return None
        return batch

    def finish(self, batch: Path) -> BatchOutcome:
        """Run (or resume) the batch's job, write its outbox, move its originals out."""
        job_id = self._job_for(batch)
        with self.db.session() as session:
            pages.release_leases(session, job_id)  # we hold the inbox lock: no one else runs it
            open_pages = pages.open_pages(session, job_id)
        if open_pages:
            with self.progress(len(open_pages), batch.name) as on_page:
                run_job_locally(self.settings, self.db, job_id, open_pages, on_page)
        settle_job(self.db, job_id)
        results = load_results(self.db, job_id)
        outbox = self.outbox / batch.name
        with searchable_writer(self.settings, results.pdf) as pdfs:
            write_outputs(results, outbox, pdfs)
        report = build_report(self.db, self.settings, job_id)
        for fmt in (ReportFormat.JSON, ReportFormat.HTML):
            (outbox / f"report.{fmt.value}").write_text(render_report(report, fmt), "utf-8")
        outcome = self._move_originals(batch, job_id, results, outbox)
        _remove_batch(batch)
        return outcome

    def _job_for(self, batch: Path) -> str:
        source = str(batch.resolve())
        with self.db.session() as session:
            job_id = jobs.latest_job_for_source(session, source)
        if job_id is not None:
            return job_id
        files = _originals(batch)
        ingested = ingest_files(
            self.db,
            zip(files, unique_names(files), strict=True),
            source,
            JobFields(
                str(self.outbox.resolve() / batch.name),
                self.settings.plan_name(),
                {"options": {"pdf": True}} if self.settings.searchable_pdf else None,
            ),
            limits=document_limits(self.settings),
        )
        return ingested.job_id

    def _move_originals(
        self, batch: Path, job_id: str, results: JobResults, outbox: Path
    ) -> BatchOutcome:
        outcome = BatchOutcome(batch.name, job_id, [], {}, outbox)
        reasons = {Path(d.path).name: d for d in results.documents}
        renamed = self._by_content(job_id, reasons, batch)
        for path in _originals(batch):
            document = reasons.get(path.name) or renamed.get(sha256_of(path) or "")
            if document is not None and document.status != DocumentStatus.FAILED:
                move_to(path, self.done, None)
                outcome.done.append(path.name)
                continue
            reason = document.error if document else "not part of the batch's job"
            move_to(path, self.failed, reason or "failed")
            outcome.failed[path.name] = reason or "failed"
        return outcome

    def _by_content(
        self, job_id: str, reasons: dict[str, DocumentResult], batch: Path
    ) -> dict[str, DocumentResult]:
        """The job's documents whose file is no longer in the batch under its name (renamed
        there mid-job), by content: a renamed file is still its document."""
        gone = {name for name in reasons if not (batch / name).exists()}
        if not gone:
            return {}
        with self.db.session() as session:
            rows = documents.document_hashes(session, job_id)
        return {sha: reasons[Path(p).name] for p, sha in rows if sha and Path(p).name in gone}


def _originals(batch: Path) -> list[Path]:
    """The batch's files (its own bookkeeping files start with a dot)."""
    return sorted(p for p in batch.iterdir() if p.is_file() and not p.name.startswith("."))


def _count_try(batch: Path) -> int:
    """One more failed try of the batch, counted in a file of its own; the count so far."""
    counter = batch / _TRIES_FILE
    try:
        tries = int(counter.read_text().strip() or 0) + 1
    except (OSError, ValueError):
        tries = 1
    counter.write_text(f"{tries}\n")
    return tries


def _remove_batch(batch: Path) -> None:
    (batch / _TRIES_FILE).unlink(missing_ok=True)
    batch.rmdir()
