"""Scans read at the verdict in `bench detector-grounding` (issue 65), as the product reads them.

A harvested scan is read by Folio's own reader at the verdict (`app.engines.verdict_read`:
Tesseract in the languages the job names, RapidOCR's second reading where it is installed and
Tesseract reads poorly), once, on this thread; its CPU seconds (the thread's own) and wall
seconds are recorded. The stream's hold is the product's (`GroundedDetector`, the default hold
of `detector_grounding_read_hold_chars`), in stream time: the read is done for the detector
after as many 4-character pieces as an H100 writes tokens in the read's CPU seconds (a 7B
page's decode step at batch 256, `H100_7B_STEP_MS`), so a read slower than the hold leaves the
verdict standing, as it would on that GPU. The languages each source's job names are those of
its pages (`SOURCE_LANGS`), as a user sets `tesseract_lang` for a batch.
"""

from __future__ import annotations

import io
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.degeneration.grounded import DEFAULT_HOLD_CHARS

# A 7B page's decode step at batch 256, KV 1,536 tokens, on an H100 (shared/notes/gpu.md, 6):
# each request in the batch gets a token every 15.1 ms while a verdict waits.
H100_7B_STEP_MS = 15.1
PIECE_CHARS = 4
# Tesseract data with the languages below (Debian's tesseract-ocr-{eng,fra,deu,frk,lat}); the
# tessdata-fast pip packages carry English only.
SYSTEM_TESSDATA = Path("/usr/share/tesseract-ocr/5/tessdata")
# The languages a job reading each harvested source's scans names (what its pages are in).
SOURCE_LANGS = {
    "HTR-United/lectaurep-repertoires": "fra",  # Paris notaries' repertories
    "HTR-United/tapuscorpus": "fra",  # French typescripts
    "HTR-United/cremma-medieval": "fra+lat",  # Old French and Latin manuscripts
    "UB-Mannheim/reichsanzeiger-gt": "frk+deu",  # the Imperial Gazette in Fraktur
    "yobix-ai/extractous": "eng+deu",  # its scans: German and English (and Arabic)
}


def tessdata_for(lang: str) -> str | None:
    """The system's Tesseract data where it has every language named, else the pip one."""
    codes = lang.split("+")
    if all((SYSTEM_TESSDATA / f"{code}.traineddata").is_file() for code in codes):
        return str(SYSTEM_TESSDATA)
    return None


@dataclass
class ScanReader:
    """Folio's verdict reader, one per language set, with every read's cost kept."""

    reads: list[dict[str, Any]] = field(default_factory=list)
    _engines: dict[str, Any] = field(default_factory=dict)

    def read(self, image: bytes, lang: str) -> dict[str, Any]:
        from PIL import Image

        from app.domain import PageInput
        from app.engines.verdict_read import ScanReads

        if lang not in self._engines:
            self._engines[lang] = ScanReads(lang, tessdata_for(lang), DEFAULT_HOLD_CHARS)
        reads = self._engines[lang]
        page = PageInput(Image.open(io.BytesIO(image)).convert("RGB"), "", False)
        started = time.perf_counter()
        done = reads._read(page)  # on this thread: its CPU time is the read's
        found = {
            "lang": lang,
            "model": done.model,
            "chars": len(done.text),
            "cpu_s": round(done.cpu_s, 3),
            "wall_s": round(time.perf_counter() - started, 3),
            "text": done.text,
        }
        self.reads.append(found)
        return found

    def close(self) -> None:
        for reads in self._engines.values():
            reads.close()


class TimedRead:
    """A `PageRead` done after the pieces an H100 writes in the read's CPU seconds."""

    def __init__(self, read: Any, cpu_s: float | None = None) -> None:
        self._read = read  # called at start: the read's result dict
        self._cpu_s = cpu_s
        self.found: dict[str, Any] | None = None
        self._left: int | None = None

    def start(self) -> None:
        if self.found is None:
            self.found = self._read()
            cpu_s = self._cpu_s if self._cpu_s is not None else self.found["cpu_s"]
            self._left = pieces_meanwhile(cpu_s)

    def settle(self) -> None:
        """The answer ended with the read still running: the engine waits for it."""
        self._left = 0

    def text(self) -> str | None:
        if self.found is None or self._left is None:
            return None
        if self._left > 0:
            self._left -= 1
            return None
        return str(self.found["text"])


def pieces_meanwhile(cpu_s: float) -> int:
    """Pieces (tokens) a stream writes on an H100 while the page is read."""
    return math.ceil(1000 * cpu_s / H100_7B_STEP_MS)


def read_cost(reads: list[dict[str, Any]]) -> dict[str, Any]:
    """CPU and wall seconds per verdict read, and the tokens an H100 stream writes meanwhile."""
    if not reads:
        return {"reads": 0}
    cpu = sorted(r["cpu_s"] for r in reads)
    p90 = cpu[min(len(cpu) - 1, int(0.9 * len(cpu)))]
    median = statistics.median(cpu)
    return {
        "reads": len(reads),
        "cpu_s_median": round(median, 2),
        "cpu_s_p90": round(p90, 2),
        "cpu_s_max": round(cpu[-1], 2),
        "wall_s_median": round(statistics.median(r["wall_s"] for r in reads), 2),
        "tokens_meanwhile_median_h100_7b": pieces_meanwhile(median),
        "tokens_meanwhile_p90_h100_7b": pieces_meanwhile(p90),
        "hold_chars": DEFAULT_HOLD_CHARS,
        "hold_tokens": DEFAULT_HOLD_CHARS // PIECE_CHARS,
        "reads_past_the_hold": sum(
            1 for c in cpu if pieces_meanwhile(c) > DEFAULT_HOLD_CHARS // PIECE_CHARS
        ),
        "models": sorted({r["model"] for r in reads}),
    }
