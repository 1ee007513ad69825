"""The embedded executor: pages on a bounded thread pool inside this process."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from app.db import page_path, pages
from app.db.engine import Database
from app.domain import PageStatus
from app.errors import StoreUnavailable
from app.pipeline.process_page import PageBusy, PageProcessor

log = logging.getLogger(__name__)

PageCallback = Callable[[int, PageStatus], None]


def run_pages(
    processor: PageProcessor,
    page_ids: Sequence[int],
    concurrency: int,
    on_page: PageCallback | None = None,
) -> dict[int, PageStatus]:
    """Process every page with at most `concurrency` at once; each ends terminal, whatever fails."""
    outcomes: dict[int, PageStatus] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="folio")
    try:
        futures = {pool.submit(_process_safely, processor, pid): pid for pid in page_ids}
        for future in as_completed(futures):
            page_id = futures[future]
            outcomes[page_id] = future.result()
            if on_page:
                on_page(page_id, outcomes[page_id])
    except BaseException:
        # Ctrl+C: start no new page; the pages in flight end (or their leases lapse), and the
        # job's open pages are what the next run of the same command takes up.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return outcomes


def _process_safely(processor: PageProcessor, page_id: int) -> PageStatus:
    # The executor's edge: whatever escapes the page's own handling is recorded on the page.
    try:
        return processor.process(page_id)
    except PageBusy:
        # Another live worker (a second `folio run`, a Celery worker) holds the page and will
        # finish it; failing it here would overwrite that worker's result.
        log.info("page %s is held by another worker; left to it", page_id)
        with processor.db.session() as session:
            return page_path.page_status(session, page_id)
    except Exception as exc:
        log.exception("page %s failed unexpectedly", page_id)
        return record_crash(processor.db, page_id, exc)


def record_crash(db: Database, page_id: int, exc: Exception) -> PageStatus:
    """Fail the page with category 'internal' for an error nothing else handled (here, the
    object store still down after the fetch's retries is `store_unavailable`)."""
    category = exc.category if isinstance(exc, StoreUnavailable) else "internal"
    with db.session() as session:
        pages.finish_page(
            session,
            page_id,
            PageStatus.FAILED,
            failure_category=category,
            error=f"{type(exc).__name__}: {exc}",
        )
        return page_path.page_status(session, page_id)
