"""A daemon thread that runs one piece of work at a fixed interval, started when first needed.

The lease heartbeat and the finalize sweep both want exactly this: nothing running while a
process holds no page, one thread once it does, and a prompt stop on close.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class PeriodicThread:
    def __init__(self, work: Callable[[], None], interval_s: float, name: str) -> None:
        self.work = work
        self.interval_s = interval_s
        self.name = name
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def ensure_started(self) -> None:
        with self._lock:
            if self._thread is None:
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def stop(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None:
            thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.work()
