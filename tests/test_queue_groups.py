"""How the CPU queue's page tasks are cut into groups (the GPU queue's carry one page each:
tests/test_distributed.py)."""

from __future__ import annotations

import pytest

from app.distributed.queue import MIN_TASKS_PER_BATCH, page_groups


@pytest.mark.parametrize("pages", [1, 3, 8, 9, 20, 50, 500, 1001])
@pytest.mark.parametrize("most", [1, 4, 8, 32])
def test_groups_keep_every_page_once_in_order_and_spread_short_documents(
    pages: int, most: int
) -> None:
    ids = list(range(100, 100 + pages))
    groups = page_groups(ids, most)
    assert [p for group in groups for p in group] == ids
    assert max(len(g) for g in groups) <= most
    assert len(groups) >= min(pages, MIN_TASKS_PER_BATCH)
    assert max(len(g) for g in groups) - min(len(g) for g in groups) <= 1
