"""A real `folio worker` whose text-layer engine takes FOLIO_TEST_ENGINE_DELAY_S per page.

For the lease tests: a page that runs longer than `page_lease_s`. The engine is the real
TextLayerEngine behind a sleep; everything else is the worker as `folio worker` runs it.
Run as `python tests/slow_worker.py worker -Q ... -P threads -c N`.
"""

from __future__ import annotations

import os
import sys
import time

from app.domain import EngineResult, PageInput
from app.engines import textlayer
from app.settings import PlanStep


class SlowTextLayerEngine(textlayer.TextLayerEngine):
    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        time.sleep(float(os.environ["FOLIO_TEST_ENGINE_DELAY_S"]))
        return super().transcribe(page, step)


def main() -> None:
    # The engine registry imports TextLayerEngine from this module when it first needs one.
    textlayer.TextLayerEngine = SlowTextLayerEngine  # type: ignore[misc]
    from workers.app import create_app

    create_app().worker_main(sys.argv[1:])


if __name__ == "__main__":
    main()
