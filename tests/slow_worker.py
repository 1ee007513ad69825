"""A real `folio worker` whose text-layer engine is slowed, or stopped at a gate the test holds.

FOLIO_TEST_ENGINE_DELAY_S: each page sleeps this long first (the lease tests: a page that runs
longer than `page_lease_s`).
FOLIO_TEST_GATE_AFTER / FOLIO_TEST_GATE_FILE: the pages past the first GATE_AFTER touch
GATE_FILE and wait until FOLIO_TEST_RELEASE_FILE exists (forever when it is unset: a worker the
test will kill). So a test acts at a point it controls, with pages certainly in flight and
certainly not all done, whatever the machine's speed; never a race against fast pages.
The engine is the real TextLayerEngine behind that; everything else is the worker as `folio
worker` runs it. Run as `python tests/slow_worker.py worker -Q ... -P threads -c N`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from app.domain import EngineResult, PageInput
from app.engines import textlayer
from app.settings import PlanStep

_passed = 0
_lock = threading.Lock()


def wait_at_the_gate() -> None:
    """Let the first FOLIO_TEST_GATE_AFTER pages through; hold the others."""
    global _passed
    if "FOLIO_TEST_GATE_AFTER" not in os.environ:
        return
    with _lock:
        through = _passed < int(os.environ["FOLIO_TEST_GATE_AFTER"])
        _passed += through
    if through:
        return
    Path(os.environ["FOLIO_TEST_GATE_FILE"]).touch()
    release = os.environ.get("FOLIO_TEST_RELEASE_FILE")
    while release is None or not Path(release).exists():
        time.sleep(0.05)


class SlowTextLayerEngine(textlayer.TextLayerEngine):
    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        time.sleep(float(os.environ.get("FOLIO_TEST_ENGINE_DELAY_S", "0")))
        wait_at_the_gate()
        return super().transcribe(page, step)


def main() -> None:
    # The engine registry imports TextLayerEngine from this module when it first needs one.
    textlayer.TextLayerEngine = SlowTextLayerEngine  # type: ignore[misc]
    from workers.app import create_app

    create_app().worker_main(sys.argv[1:])


if __name__ == "__main__":
    main()
