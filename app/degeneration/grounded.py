"""The stream's detector, asking the page before a verdict cuts (`grounding` says how).

A page with a text layer is asked at once. A page without one (a scan) is read at its first
verdict that holds words (issue 65): `PageRead.start` asks for the read, which runs elsewhere
(the engine's worker thread: Tesseract, RapidOCR), and the verdict is held while the stream
goes on, up to `hold_chars` characters past it (up to `moved_on_chars` where the stream has
moved on from the verdict's unit); once the read is done its text answers every verdict as a
text layer does. A read still running then leaves the held verdict standing there (cut
`hold_chars` later than without a read), as does a read that found nothing.
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
# Characters a held verdict may wait for the read in all, past `hold_chars`, while the stream
# has moved on from its unit (`_moved_away`: a detector of its own from the verdict on calls no
# loop, and the last two copies' length holds no copy of the unit): a loop writes its unit
# again within every period, so it is cut at the hold as before; a page that was read right
# goes on to its next rows while a 5,000-character table is read (4-5 CPU-s, about 1,300
# characters of an H100's stream), and its answer is kept. 4,096 characters are about 1,000
# tokens, 15 s of an H100's decode step at batch 256.
DEFAULT_MOVED_ON_CHARS = 4096
# Characters between two checks of whether the stream moved on (each asks the window alone).
_MOVED_ON_EVERY = 64
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
        moved_on_chars: int = DEFAULT_MOVED_ON_CHARS,
    ) -> None:
        """`slack`: copies the page's text may miss (`READ_SLACK` where it is a scan's read; a
        `PageRead`'s text is given it); `moved_on_chars`: characters a held verdict may wait in
        all where the stream moved on from its unit (`DEFAULT_MOVED_ON_CHARS`)."""
        self._config = config or DetectorConfig()
        self._page = PageText(page) if isinstance(page, str) else None
        self._read = None if isinstance(page, str) else page
        self._margin = margin
        self._slack = slack if isinstance(page, str) else READ_SLACK
        self._hold_chars = hold_chars
        self._moved_on_chars = moved_on_chars
        self._moved_on: tuple[int, bool] = (-1, False)  # (checked at, moved on)
        self._since: LoopDetector | None = None  # a detector of its own from the held verdict
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
        self.read_moved_on = False  # the verdict waited past the hold: the stream moved on

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
            if self._since is not None:
                self._since.feed(chunk)
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
        if text is None and not at_end and waited < self._moved_on_chars and self._moved_away():
            self.read_moved_on = True
            return
        verdict, repeats = self._held
        self._held, self.read_waited = None, waited
        if text is None:
            self.read_missed = True
            self._verdict = verdict
            return
        self._page = PageText(text)
        self._judge(verdict, repeats)

    def _moved_away(self) -> bool:
        """Whether the stream moved on from the held verdict: a detector of its own, fed from
        the verdict on, called no loop (a loop runs on in full swing: the tags, stutters and
        drifting spellings of real loops that grounding's tokens cannot count are caught so),
        and the last two copies' length (and 64 characters) holds no copy of its unit by the
        verdict's own measure, checked every `_MOVED_ON_EVERY` characters."""
        assert self._held is not None
        if self._since is not None and self._since.verdict is not None:
            return False
        checked, moved = self._moved_on
        if checked >= 0 and self._length - checked < _MOVED_ON_EVERY:
            return moved
        verdict = self._held[0]
        output = "".join(self._pieces)
        self._pieces = [output]
        asked_at = self.read_asked_at or 0
        size = 2 * verdict.period + 64  # holds a whole copy wherever it starts
        if len(output) - asked_at < size:  # too little written since to tell
            self._moved_on = (self._length, False)
            return False
        window = output[-size:]
        # the unit as the verdict read it (the output then), looked for in the window
        found = ground(verdict, output[:asked_at], PageText(window), self._config.fuzzy_min_chars)
        moved = found is not None and found.page_copies == 0
        self._moved_on = (self._length, moved)
        return moved

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
            self._since = LoopDetector(self._config)  # does the stream loop on from here?
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
