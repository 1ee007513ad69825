"""A real `folio` CLI whose text-layer engine stops at a gate after FOLIO_TEST_GATE_AFTER pages.

For the resume tests and the killed-watcher test (`gated_run.py watch ...`): the run must still
be going when the test interrupts it, whatever the machine's speed. Page FOLIO_TEST_GATE_AFTER + 1
touches FOLIO_TEST_GATE_FILE and waits; Ctrl+C (SIGINT) ends the wait the way it ends a real page
in flight: with KeyboardInterrupt, so no page past the gate finishes in this run. SIGKILL needs
no help. Everything else is `folio` as shipped. Run as `python tests/gated_run.py run ...`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from app.domain import EngineResult, PageInput
from app.engines import textlayer
from app.settings import PlanStep

interrupted = threading.Event()
passed = 0
passed_lock = threading.Lock()


class GatedTextLayerEngine(textlayer.TextLayerEngine):
    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        global passed
        with passed_lock:
            open_gate = passed < int(os.environ["FOLIO_TEST_GATE_AFTER"])
            passed += open_gate
        if not open_gate:
            Path(os.environ["FOLIO_TEST_GATE_FILE"]).touch()
            interrupted.wait()
            raise KeyboardInterrupt
        return super().transcribe(page, step)


def on_sigint(signum: int, frame: FrameType | None) -> None:
    interrupted.set()
    signal.default_int_handler(signum, frame)


def main() -> None:
    # The engine registry imports TextLayerEngine from this module when it first needs one.
    textlayer.TextLayerEngine = GatedTextLayerEngine  # type: ignore[misc]
    signal.signal(signal.SIGINT, on_sigint)
    from app.cli.main import app

    app(sys.argv[1:], prog_name="folio")


if __name__ == "__main__":
    main()
