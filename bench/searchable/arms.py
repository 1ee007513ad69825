"""The arms a page goes through, each writing a searchable PDF of it:

- `ocrmypdf`: OCRmyPDF (PyPI, in its own venv: bench/ocrmypdf_env.sh) with Debian's Tesseract,
  `--output-type pdf` (no PDF/A conversion, which rewrites the page), one job at a time;
- `folio`, `folio[scan]`: `folio run --pdf` as installed (the [scan] extra hidden) and with
  RapidOCR, the embedded default plan;
- `folio+truth`, `folio+truth-5%`: the ground truth as a model's answer (and with 5% of its
  words altered), placed by Folio's writer through Tesseract's words, as for a VLM page.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from app.engines.tesseract import TesseractEngine
from app.searchable.reading import TesseractWords
from app.searchable.writer import PageText, SearchablePdfWriter
from bench.searchable.pages import BenchPage

OCRMYPDF_VENV = Path(
    os.environ.get("FOLIO_OCRMYPDF_VENV", Path.home() / ".cache/folio/ocrmypdf-venv")
)
_WITHOUT_SCAN_EXTRA = "import sys; sys.modules.update(rapidocr=None, onnxruntime=None); "


@dataclass(frozen=True)
class Written:
    pdf: Path | None  # None: the arm wrote nothing for the page
    seconds: float  # per page
    kept: str | None = None  # the text the arm meant to lay down, where it says


def ocrmypdf_available() -> bool:
    return (OCRMYPDF_VENV / "bin" / "ocrmypdf").exists()


def ocrmypdf_arm(pages: list[BenchPage], work: Path) -> dict[str, Written]:
    out = work / "ocrmypdf"
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for page in pages:
        target = out / f"{page.name}.pdf"
        command = [str(OCRMYPDF_VENV / "bin" / "ocrmypdf"), "--output-type", "pdf", "-j", "1"]
        command += ["--optimize", "0", "-l", "eng", "--quiet", str(page.pdf), str(target)]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        written[page.name] = Written(target if done.returncode == 0 else None, seconds)
    return written


def folio_arm(pages: list[BenchPage], work: Path, scan_extra: bool) -> dict[str, Written]:
    """One `folio run --pdf` over every page (one process, concurrency 1); seconds shared."""
    name = "folio-scan" if scan_extra else "folio"
    source, out = work / name / "in", work / name / "out"
    source.mkdir(parents=True, exist_ok=True)
    for page in pages:
        (source / page.pdf.name).symlink_to(page.pdf.resolve())
    launch = ("" if scan_extra else _WITHOUT_SCAN_EXTRA) + "from app.cli.main import main; main()"
    command = [sys.executable, "-c", launch, "run", str(source), "--out", str(out), "--pdf"]
    command += ["--concurrency", "1", "--database-url", f"sqlite:///{work / name / 'folio.db'}"]
    env = {**os.environ, "FOLIO_CONFIG": str(work / "none.toml")}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = (time.perf_counter() - started) / max(len(pages), 1)
    if done.returncode not in (0, 3):
        raise RuntimeError(f"folio run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    written = {}
    for page in pages:
        result = out / f"{page.pdf.stem}.json"
        pdf = out / f"{page.pdf.stem}.pdf"
        kept = None
        if result.exists():
            kept = json.loads(result.read_text(encoding="utf-8"))["pages"][0]["text"]
        written[page.name] = Written(pdf if pdf.exists() else None, seconds, kept)
    return written


def altered(text: str, share: float, seed: int) -> str:
    """`text` with `share` of its words (at least one) misread: a letter inside each changed,
    as a reader errs; the word count stays, so each word still has its true box."""
    rng = random.Random(seed)
    lines = [line.split(" ") for line in text.split("\n")]
    spots = [(i, j) for i, line in enumerate(lines) for j, w in enumerate(line) if len(w) >= 3]
    for i, j in rng.sample(spots, k=min(len(spots), max(1, round(share * len(spots))))):
        word = lines[i][j]
        at = rng.randrange(1, len(word) - 1)
        letter = rng.choice([c for c in "aeioustnrlx" if c != word[at]])
        lines[i][j] = word[:at] + letter + word[at + 1 :]
    return "\n".join(" ".join(line) for line in lines)


def model_arm(pages: list[BenchPage], work: Path, errors: float) -> dict[str, Written]:
    """The truth (altered by `errors`) as a VLM's answer, through Folio's writer."""
    out = work / f"truth-{errors:.2f}"
    out.mkdir(parents=True, exist_ok=True)
    words = TesseractWords(lambda: TesseractEngine(second_reader=None), 200)
    writer = SearchablePdfWriter(lambda path, sha, etag: Path(path), words)
    written = {}
    try:
        for index, page in enumerate(pages):
            kept = altered(page.truth, errors, seed=index) if errors else page.truth
            started = time.perf_counter()
            data = writer.write(str(page.pdf), None, None, [PageText(1, "vlm", kept)])
            seconds = time.perf_counter() - started
            target = out / f"{page.name}.pdf"
            target.write_bytes(data)
            written[page.name] = Written(target, seconds, kept)
    finally:
        words.close()
    return written
