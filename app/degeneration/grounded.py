"""The stream's detector, asking the page before a verdict cuts (`grounding` says how).

A page with a text layer is asked at once. A page without one (a scan) is read at its first
verdict that holds words (issue 65): `PageRead.start` asks for the read, which runs elsewhere
(the engine's worker thread: Tesseract, RapidOCR), and the verdict is held while the stream
goes on, up to `hold_chars` characters past it; once the read is done its text answers every
verdict as a text layer does. A read still running at `hold_chars` leaves the held verdict
standing there (cut `hold_chars` later than without a read), as does a read that found nothing.
Why hold rather than cut and confirm: at the measured cost of a read (about a second of one
CPU core, 57 tokens of an H100's decode step at batch 256) a real loop runs on a few hundred
characters, while a false alarm cut and confirmed costs the page's answer twice
(`bench detector-grounding`, docs/detector-evaluation.md).

Pure, like the detector: the read is behind `PageRead`; it also runs inside vLLM's engine (the
plugin's loop stop), which gets a page's text, never a read.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from app.degeneration.config import DetectorConfig, LoopVerdict
from app.degeneration.grounding import DEFAULT_MARGIN, Grounding, PageText, ground
from app.degeneration.online import LoopDetector

# Characters a stream may run on past a verdict while the page is read: 384 characters are
# about 110 tokens, 1.7 s of a 7B decode step at batch 256 on an H100 (15.1 ms a step,
# shared/notes/gpu.md), past the slowest Tesseract read measured on the olmOCR-bench sample
# (1.97 CPU-s at 200 dpi, median 0.85); with the stop's own p90 of 600 characters from a
# loop's start to its cut, a loop on a scan is still cut within 1,000 characters.
DEFAULT_HOLD_CHARS = 384
# Copies an OCR read of a scan may miss of a unit the page holds (a word misread once: a
# receipt's four `GRILLVEG-H` lines read as three): a read's count is taken one copy higher
# than a text layer's, at the first question and after it (`bench detector-grounding`).
READ_SLACK = 1


class PageRead(Protocol):
    """A page read where the detector is not (OCR on a worker thread)."""

    def start(self) -> None:
        """Ask for the read (once; later calls do nothing)."""

    def text(self) -> str | None:
        """The page's text once the read is done ("" where it found none), else None."""


class GroundedDetector:
    """A `LoopDetector` whose verdicts the page's own text may overrule (`grounding`), the page
    given as its text or as a read to ask for at the first verdict."""

    def __init__(
        self,
        config: DetectorConfig | None,
        page: str | PageRead,
        margin: int = DEFAULT_MARGIN,
        hold_chars: int = DEFAULT_HOLD_CHARS,
        slack: int = 0,
    ) -> None:
        """`slack`: copies the page's text may miss (`READ_SLACK` where it is a scan's read; a
        `PageRead`'s text is given it)."""
        self._config = config or DetectorConfig()
        self._page = PageText(page) if isinstance(page, str) else None
        self._read = None if isinstance(page, str) else page
        self._margin = margin
        self._slack = slack if isinstance(page, str) else READ_SLACK
        self._hold_chars = hold_chars
        self._inner = LoopDetector(self._config)
        self._base = 0  # raw offset at which the inner detector started
        self._pieces: list[str] = []
        self._length = 0
        self._verdict: LoopVerdict | None = None
        self._held: tuple[LoopVerdict, float] | None = None  # a verdict waiting for the read
        self._allowed: dict[str, int] = {}  # unit key -> copies the output may hold
        self._seen: dict[str, int] = {}  # unit key -> copies the inner detectors counted
        self.asked: list[Grounding] = []  # every verdict the page was asked about, in order
        self.read_asked_at: int | None = None  # characters of output when the read was asked
        self.read_waited: int | None = None  # characters the stream ran on, waiting for it
        self.read_missed = False  # the hold ended before the read was done

    @property
    def config(self) -> DetectorConfig:
        return self._config

    @property
    def verdict(self) -> LoopVerdict | None:
        return self._verdict

    @property
    def text_length(self) -> int:
        return self._length

    @property
    def page_read(self) -> PageRead | None:
        """The read asked for at the first verdict, where the page had no text."""
        return self._read

    @property
    def holding(self) -> bool:
        """Whether a verdict waits for the page's read."""
        return self._held is not None

    @property
    def overruled(self) -> list[Grounding]:
        return [g for g in self.asked if g.overruled]

    @property
    def standing(self) -> Grounding | None:
        """What the page held of the verdict that stood, where it was asked."""
        last = self.asked[-1] if self.asked else None
        return last if last is not None and not last.overruled and self._verdict else None

    def feed(self, chunk: str) -> LoopVerdict | None:
        if self._verdict is not None:
            return self._verdict
        self._pieces.append(chunk)
        self._length += len(chunk)
        if self._held is not None:
            self._wait(at_end=False)
            return self._verdict
        found = self._inner.feed(chunk)
        if found is not None:
            self._judge(replace(found, onset=found.onset + self._base), found.repeats)
        return self._verdict

    def finish(self) -> LoopVerdict | None:
        """The text is complete: a held verdict is judged by the read if it is done, and
        stands if not."""
        if self._held is not None:
            self._wait(at_end=True)
        if self._verdict is None and self._held is None:
            found = self._inner.finish()
            if found is not None:
                self._judge(replace(found, onset=found.onset + self._base), found.repeats)
                if self._held is not None:
                    self._wait(at_end=True)
        return self._verdict

    def _wait(self, at_end: bool) -> None:
        """A held verdict: asked of the read once it is done; standing past the hold."""
        assert self._held is not None and self._read is not None
        text = self._read.text()
        waited = self._length - (self.read_asked_at or 0)
        if text is None and not at_end and waited < self._hold_chars:
            return
        verdict, repeats = self._held
        self._held, self.read_waited = None, waited
        if text is None:
            self.read_missed = True
            self._verdict = verdict
            return
        self._page = PageText(text)
        self._judge(verdict, repeats)

    def _judge(self, verdict: LoopVerdict, repeats: float) -> None:
        output = "".join(self._pieces)
        self._pieces = [output]
        min_chars = self._config.fuzzy_min_chars
        if self._page is None:  # the page is not read yet: hold a verdict it could answer
            if ground(verdict, output, PageText(""), min_chars) is None:
                self._verdict = verdict
                return
            assert self._read is not None
            self._read.start()
            self._held, self.read_asked_at = (verdict, repeats), self._length
            self._wait(at_end=False)  # a read done already (a second question) answers now
            return
        asked = ground(verdict, output, self._page, min_chars)
        if asked is None:
            self._verdict = verdict
            return
        key = asked.unit
        seen = self._seen.get(key, 0) + int(repeats)
        self._seen[key] = seen
        copies = max(asked.output_copies, seen)
        page_copies = asked.page_copies + self._slack
        if copies <= self._allowed.get(key, page_copies):
            self._allowed[key] = page_copies + self._margin
            self.asked.append(replace(asked, output_copies=copies, overruled=True))
            self._inner = LoopDetector(self._config)  # the unit is counted afresh from here
            self._base = self._length
            return
        self.asked.append(replace(asked, output_copies=copies))
        self._verdict = verdict
