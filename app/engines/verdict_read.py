"""A scan read at a loop verdict, so that grounding can ask it (issue 65).

A page without a usable text layer has nothing for grounding to ask, and most of what a VLM
reads is such pages. At the first verdict on one (`app.degeneration.grounded`), the page is
read by the Tesseract engine Folio's fallback uses, in the job's languages (`tesseract_lang`),
every line as Tesseract lays it out (`TesseractEngine.read_lines`: a page asked how often it
holds a line is read as written), scaled to `READ_MAX_SIDE`, with RapidOCR's second reading
where the [scan] extra is installed and Tesseract reads poorly.
The read runs on a worker thread of its own, never on the engine's event loop (one loop serves
every stream of a worker), while the stream goes on. Its text, the reader, and what it cost
(CPU seconds on its thread, wall seconds) are kept on the attempt (`record`), for the report,
for export-dpo, and for the page's later attempts, which ask the same text rather than read
the page again.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from dataclasses import dataclass
from typing import Any

from PIL import Image

from app.degeneration.grounded import DEFAULT_MOVED_ON_CHARS
from app.domain import PageInput
from app.errors import ConfigError, EngineError

# The longest side a page is read at: a phone's photo of a receipt (4,961 x 7,016 px) took 3.4
# CPU-s, past the hold, and 1.2 s at 3,000 px with its text read alike (997 against 1,046
# characters); 3,000 px is 250 dpi on a Letter page's long side, past what Tesseract needs.
READ_MAX_SIDE = 3000


def within(image: Image.Image, side: int) -> Image.Image:
    """`image` scaled down so that its longer side is at most `side` pixels."""
    scale = side / max(image.size)
    if scale >= 1:
        return image
    size = (max(1, round(image.size[0] * scale)), max(1, round(image.size[1] * scale)))
    return image.resize(size, Image.Resampling.LANCZOS)


@dataclass(frozen=True)
class ReadDone:
    text: str
    model: str
    cpu_s: float
    wall_s: float
    error: str | None = None


class ScanReads:
    """The worker threads that read scans at their verdicts, and the reader they share."""

    def __init__(
        self,
        lang: str,
        tessdata_dir: str | None,
        hold_chars: int,
        workers: int = 1,
        wait_s: float = 30.0,
        moved_on_chars: int = DEFAULT_MOVED_ON_CHARS,
    ) -> None:
        self.lang, self.tessdata_dir = lang, tessdata_dir
        self.hold_chars = hold_chars  # characters a stream runs on while its page is read
        self.moved_on_chars = moved_on_chars  # ... in all, where it moved on from the unit
        self.wait_s = wait_s  # seconds an attempt waits for a read still running at its end
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="folio-verdict-read"
        )
        self._reader: Any = None
        self._lock = threading.Lock()

    def for_page(self, page: PageInput) -> VerdictRead:
        return VerdictRead(self, page)

    def submit(self, page: PageInput) -> concurrent.futures.Future[ReadDone]:
        return self._pool.submit(self._read, page)

    def _engine(self) -> Any:
        with self._lock:
            if self._reader is None:
                from app.engines.tesseract import TesseractEngine  # loads libtesseract

                self._reader = TesseractEngine(self.lang, self.tessdata_dir)
            return self._reader

    def _read(self, page: PageInput) -> ReadDone:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            text, model = self._engine().read_lines(within(page.image, READ_MAX_SIDE))
            error = None
        except (EngineError, ConfigError, OSError, ValueError) as exc:
            text, model, error = "", "tesseract", str(exc)[:200]
        return ReadDone(text, model, time.thread_time() - cpu, time.perf_counter() - wall, error)

    def close(self) -> None:
        # A read under way finishes first: its Tesseract API is ended below.
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None


class VerdictRead:
    """One page's read, asked for at its first verdict (`app.degeneration.grounded.PageRead`)."""

    def __init__(self, reads: ScanReads, page: PageInput) -> None:
        self._reads, self._page = reads, page
        self._future: concurrent.futures.Future[ReadDone] | None = None

    def start(self) -> None:
        if self._future is None:
            self._future = self._reads.submit(self._page)

    @property
    def moved_on_chars(self) -> int:
        return self._reads.moved_on_chars

    @property
    def started(self) -> bool:
        return self._future is not None

    def text(self) -> str | None:
        done = self._done()
        return None if done is None else done.text

    def wait(self) -> None:
        """Block (a worker thread, not the event loop) until the read is done, or its wait."""
        if self._future is not None:
            concurrent.futures.wait([self._future], self._reads.wait_s)

    def record(self) -> dict[str, Any] | None:
        """What the attempt keeps of the read (None: not asked for, or still running)."""
        done = self._done()
        if done is None:
            return None
        found: dict[str, Any] = {
            "model": done.model,
            "chars": len(done.text),
            "cpu_s": round(done.cpu_s, 3),
            "wall_s": round(done.wall_s, 3),
            "text": done.text,
        }
        return found | ({"error": done.error} if done.error else {})

    def _done(self) -> ReadDone | None:
        future = self._future
        if future is None or not future.done() or future.cancelled():
            return None
        return future.result()
