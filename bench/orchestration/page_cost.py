"""One page at a time in one thread: a tree's page path cost without Celery or contention.

Run by path with PYTHONPATH naming the tree to measure (see `bench.orchestration.benchmark`):

    python bench/orchestration/page_cost.py DATABASE_URL FOLDER

Ingests FOLDER, processes its pages one by one with that tree's PageProcessor and prints JSON:
per page, the wall time of `process` minus rendering and engine time (ms), and the database
traffic counted as `count_worker` counts it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from count_worker import COUNTS, install  # this folder is sys.path[0]


def main() -> None:
    url, folder = sys.argv[1], Path(sys.argv[2])
    install()
    from sqlalchemy import func, select

    from app.db.engine import Database
    from app.db.models import Attempt, Page
    from app.engines.registry import EngineSet
    from app.jobs import JobRequest, create_job, worker_id
    from app.pipeline.process_page import PageProcessor
    from app.settings import Settings

    settings = Settings(database_url=url, engine="textlayer", dpi=36)
    db = Database(url)
    pages = create_job(settings, db, JobRequest(folder, None, "textlayer")).page_ids
    processor = PageProcessor(settings, db, EngineSet(settings), owner=worker_id())
    processor.process(pages[0])  # warm up: imports, first connection, first render
    wall = {}
    COUNTS.clear()
    for page_id in pages[1:]:
        started = time.perf_counter()
        processor.process(page_id)
        wall[page_id] = time.perf_counter() - started
    traffic = dict(COUNTS)
    with db.session() as session:
        rows = session.execute(
            select(Page.id, Page.render_s + func.coalesce(func.sum(Attempt.duration_s), 0.0))
            .join(Attempt, Attempt.page_id == Page.id)
            .where(Page.id.in_(list(wall)))
            .group_by(Page.id, Page.render_s)
        ).all()
    spent = {page_id: seconds for page_id, seconds in rows}
    overhead = [(wall[p] - float(spent[p] or 0.0)) * 1000 for p in wall]
    print(json.dumps({"overhead_ms": overhead, "traffic": traffic, "pages": len(wall)}))


if __name__ == "__main__":
    main()
