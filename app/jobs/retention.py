"""Retention: the files Folio keeps for jobs that ended long ago, found and deleted.

Folio owns two kinds of files: the API's upload folders (`upload_dir/<id>/`, one per job)
and result zips (`folio-results-*.zip` in the temporary folder, normally deleted once sent; a
crash mid-download leaves them). Pages are rendered in memory, so no page image is kept.
Files under a `folio run --out` folder belong to the user and are never touched. Only jobs
that ended (`done`, `cancelled`) before the cutoff qualify, so a running job keeps its files;
their database rows stay (reports keep working) unless rows are asked for too.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.db import jobs
from app.db.engine import Database
from app.domain import JobStatus

log = logging.getLogger(__name__)

UPLOAD_SOURCE = "upload:"  # an API job's `source`: `upload:<folder name under upload_dir>`
RESULT_ZIPS = "folio-results-*.zip"
ENDED = (JobStatus.DONE, JobStatus.CANCELLED)


@dataclass
class PurgeReport:
    """What a purge deleted, or would delete on a dry run."""

    cutoff: datetime
    dry_run: bool
    jobs: list[str] = field(default_factory=list)  # ended before the cutoff
    folders: list[Path] = field(default_factory=list)
    zips: list[Path] = field(default_factory=list)
    bytes: int = 0
    rows_deleted: int = 0


def purge(
    db: Database,
    upload_dir: Path,
    older_than_days: float,
    *,
    dry_run: bool = False,
    with_rows: bool = False,
    zip_dir: Path | None = None,
) -> PurgeReport:
    """Delete the files of jobs that ended more than `older_than_days` ago (and their rows).

    `zip_dir`: where result zips are made (the temporary folder, as `tempfile` says).
    """
    if older_than_days < 0:
        raise ValueError("older_than_days must not be negative")
    cutoff = datetime.now(UTC) - timedelta(days=older_than_days)
    report = PurgeReport(cutoff, dry_run)
    with db.session() as session:
        ended = jobs.ended_before(session, ENDED, cutoff)
        uploads = jobs.sources_starting(session, UPLOAD_SOURCE)
    in_use = {source.removeprefix(UPLOAD_SOURCE) for source in uploads}
    report.jobs = [job_id for job_id, _ in ended]
    for _, source in ended:
        if source.startswith(UPLOAD_SOURCE):
            _take(report, upload_dir / source.removeprefix(UPLOAD_SOURCE))
    for folder in _orphan_uploads(upload_dir, in_use, cutoff):
        _take(report, folder)
    for path in sorted((zip_dir or Path(tempfile.gettempdir())).glob(RESULT_ZIPS)):
        if _modified(path) < cutoff:
            _take(report, path)
    if not dry_run:
        _delete(report, db, with_rows)
    return report


def _orphan_uploads(upload_dir: Path, in_use: set[str], cutoff: datetime) -> list[Path]:
    """Upload folders no job names (their rows were purged, or ingest never finished)."""
    if not upload_dir.is_dir():
        return []
    return sorted(
        p
        for p in upload_dir.iterdir()
        if p.is_dir() and p.name not in in_use and _modified(p) < cutoff
    )


def _take(report: PurgeReport, path: Path) -> None:
    if not path.exists():
        return
    if path.is_dir():
        report.folders.append(path)
        report.bytes += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    else:
        report.zips.append(path)
        report.bytes += path.stat().st_size


def _delete(report: PurgeReport, db: Database, with_rows: bool) -> None:
    for folder in report.folders:
        shutil.rmtree(folder, ignore_errors=True)
    for path in report.zips:
        path.unlink(missing_ok=True)
    if with_rows and report.jobs:
        with db.session() as session:
            report.rows_deleted = jobs.delete_jobs(session, report.jobs)


def _modified(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)


class RetentionTimer:
    """Runs `purge` (files only) every `every_s` seconds in a background thread."""

    def __init__(
        self, db: Database, upload_dir: Path, days: float, every_s: float = 3600.0
    ) -> None:
        self.db, self.upload_dir, self.days, self.every_s = db, upload_dir, days, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="folio-retention", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            try:
                report = purge(self.db, self.upload_dir, self.days)
                if report.folders or report.zips:
                    log.warning(
                        "retention: deleted %d upload folder(s), %d zip(s), %d bytes",
                        len(report.folders),
                        len(report.zips),
                        report.bytes,
                    )
            except Exception:  # the server's edge: a failed sweep must not stop the API
                log.exception("retention sweep failed; next one in %.0f s", self.every_s)
            if self._stop.wait(self.every_s):
                return
