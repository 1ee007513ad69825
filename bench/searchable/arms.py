"""The arms a page goes through, each writing a searchable PDF of it:

- `ocrmypdf`: OCRmyPDF (PyPI, in its own venv: bench/ocrmypdf_env.sh) with Debian's Tesseract,
  `--output-type pdf` (no PDF/A conversion, which rewrites the page), one job at a time;
- `folio`, `folio[scan]`: `folio run --pdf` on the page as installed (the [scan] extra hidden)
  and with RapidOCR, the embedded default plan, one process per page;
- `folio+truth`, `folio+truth-5%`: the ground truth as a model's answer (and with 5% of its
  words altered), placed by Folio's writer through Tesseract's words, as for a VLM page.

Each arm keeps its outputs in the work folder, a page's PDF beside `<page>.json` (its wall and
CPU seconds, the text it meant to lay down): a page done is not done again, so an arm can be
run on its own, beside the others, and a stopped run goes on where it was.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.engines.tesseract import TesseractEngine
from app.searchable.reading import TesseractWords
from app.searchable.writer import PageText, SearchablePdfWriter
from bench.searchable.pages import BenchPage

OCRMYPDF_VENV = Path(
    os.environ.get("FOLIO_OCRMYPDF_VENV", Path.home() / ".cache/folio/ocrmypdf-venv")
)
_WITHOUT_SCAN_EXTRA = "import sys; sys.modules.update(rapidocr=None, onnxruntime=None); "
ARMS = ("ocrmypdf", "folio", "folio[scan]", "folio+truth", "folio+truth-5%")


@dataclass(frozen=True)
class Written:
    pdf: Path | None  # None: the arm wrote nothing for the page
    seconds: float | None  # wall, per page
    cpu_seconds: float | None = None
    kept: str | None = None  # the text the arm meant to lay down, where it says


def ocrmypdf_available() -> bool:
    return (OCRMYPDF_VENV / "bin" / "ocrmypdf").exists()


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _timed_run(command: list[str], env: dict[str, str] | None = None) -> tuple[int, float, float]:
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    return done.returncode, time.perf_counter() - started, _children_cpu() - cpu


def _kept(folder: Path, page: BenchPage) -> Written:
    facts = json.loads((folder / f"{page.name}.json").read_text(encoding="utf-8"))
    pdf = folder / f"{page.name}.pdf"
    return Written(
        pdf if pdf.exists() else None, facts["seconds"], facts.get("cpu_seconds"), facts.get("kept")
    )


def _each_page(
    folder: Path, pages: list[BenchPage], write: Callable[[BenchPage, Path], dict[str, Any]]
) -> dict[str, Written]:
    """`write(page, target)` for each page not done yet; every page's outcome, kept."""
    folder.mkdir(parents=True, exist_ok=True)
    for page in pages:
        facts = folder / f"{page.name}.json"
        if not facts.exists():
            found = write(page, folder / f"{page.name}.pdf")
            facts.write_text(json.dumps(found, ensure_ascii=False), encoding="utf-8")
    return {page.name: _kept(folder, page) for page in pages}


def ocrmypdf_arm(pages: list[BenchPage], work: Path) -> dict[str, Written]:
    def write(page: BenchPage, target: Path) -> dict[str, Any]:
        command = [str(OCRMYPDF_VENV / "bin" / "ocrmypdf"), "--output-type", "pdf", "-j", "1"]
        command += ["--optimize", "0", "-l", "eng", "--quiet", str(page.pdf), str(target)]
        code, seconds, cpu = _timed_run(command)
        if code != 0:
            target.unlink(missing_ok=True)
        return {"seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3), "exit": code}

    return _each_page(work / "ocrmypdf", pages, write)


def folio_arm(pages: list[BenchPage], work: Path, scan_extra: bool) -> dict[str, Written]:
    """`folio run --pdf` per page (concurrency 1), as a user runs it on one document."""
    folder = work / ("folio-scan" if scan_extra else "folio")
    launch = ("" if scan_extra else _WITHOUT_SCAN_EXTRA) + "from app.cli.main import main; main()"
    env = {**os.environ, "FOLIO_CONFIG": str(work / "none.toml")}

    def write(page: BenchPage, target: Path) -> dict[str, Any]:
        out = folder / "runs" / page.name
        command = [sys.executable, "-c", launch, "run", str(page.pdf), "--out", str(out)]
        command += ["--pdf", "--concurrency", "1", "--database-url", f"sqlite:///{out}.db"]
        code, seconds, cpu = _timed_run(command, env)
        if code not in (0, 3):
            raise RuntimeError(f"folio run failed ({code}) on {page.name}")
        result, pdf = out / f"{page.pdf.stem}.json", out / f"{page.pdf.stem}.pdf"
        kept = json.loads(result.read_text(encoding="utf-8"))["pages"][0]["text"]
        if pdf.exists():
            pdf.replace(target)
        return {"seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3), "kept": kept}

    return _each_page(folder, pages, write)


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
    words = TesseractWords(lambda: TesseractEngine(second_reader=None), 200)
    writer = SearchablePdfWriter(lambda path, sha, etag: Path(path), words)
    seeds = {page.name: index for index, page in enumerate(pages)}

    def write(page: BenchPage, target: Path) -> dict[str, Any]:
        kept = altered(page.truth, errors, seed=seeds[page.name]) if errors else page.truth
        cpu, started = time.process_time(), time.perf_counter()
        target.write_bytes(writer.write(str(page.pdf), None, None, [PageText(1, "vlm", kept)]))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        return {"seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3), "kept": kept}

    try:
        return _each_page(work / f"truth-{errors:.2f}", pages, write)
    finally:
        words.close()


ARM_FOLDERS = {
    "ocrmypdf": "ocrmypdf",
    "folio": "folio",
    "folio[scan]": "folio-scan",
    "folio+truth": "truth-0.00",
    "folio+truth-5%": "truth-0.05",
}


def finished(name: str, pages: list[BenchPage], work: Path) -> dict[str, Written]:
    """What arm `name` has written so far, by page (nothing is run)."""
    folder = work / ARM_FOLDERS[name]
    return {p.name: _kept(folder, p) for p in pages if (folder / f"{p.name}.json").exists()}


def run_arm(name: str, pages: list[BenchPage], work: Path) -> dict[str, Written]:
    if name == "ocrmypdf":
        return ocrmypdf_arm(pages, work)
    if name in ("folio", "folio[scan]"):
        return folio_arm(pages, work, scan_extra=name == "folio[scan]")
    return model_arm(pages, work, errors=0.05 if name.endswith("5%") else 0.0)
