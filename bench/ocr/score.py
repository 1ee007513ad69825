"""olmOCR-bench's official scorer, run in its own venv, and its verdicts read per test type."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.environment import REPO

SCORER_VENV = Path(
    os.environ.get("FOLIO_OLMOCR_VENV", Path.home() / ".cache/folio/olmocr-bench-venv")
)
_CANDIDATE = re.compile(r"^Candidate: (\S+)$")
_FAIL = re.compile(r"^\s+\[FAIL\] Test (\S+) on ")
_ERROR = re.compile(r"^\s+\[ERROR\] ")


@dataclass(frozen=True)
class Test:
    id: str
    pdf: str
    type: str

    @property
    def categories(self) -> tuple[str, ...]:
        """Its type, `headers_footers` too for the header/footer PDFs' tests, and `total`."""
        extra = ("headers_footers",) if self.pdf.startswith("headers_footers/") else ()
        return (self.type, *extra, "total")


def load_dataset(sample: Path) -> list[Test]:
    """The sample's unit tests from `dataset.jsonl` (the scorer adds a baseline per PDF)."""
    tests = []
    for line in (sample / "dataset.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            tests.append(Test(row["id"], row["pdf"], row["type"]))
    return tests


def ensure_scorer() -> Path:
    """The scorer venv's python, installing it on first use."""
    subprocess.run(["bash", str(REPO / "bench" / "olmocr_env.sh")], check=True)
    return SCORER_VENV / "bin" / "python"


def run_scorer(data_dir: Path) -> str:
    """The scorer's console output for every candidate folder under `data_dir`."""
    python = ensure_scorer()
    shim = REPO / "bench" / "ocr" / "olmocr_scorer.py"
    done = subprocess.run(
        [str(python), str(shim), "--dir", str(data_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = done.stderr[-3000:]
        raise RuntimeError(f"olmOCR-bench scorer failed ({done.returncode}):\n{tail}")
    return done.stdout


def failures_by_candidate(output: str) -> dict[str, set[str] | None]:
    """Failed test ids per candidate; None for a candidate the scorer refused (missing files)."""
    failed: dict[str, set[str] | None] = {}
    current: str | None = None
    for line in output.splitlines():
        if match := _CANDIDATE.match(line):
            current = match.group(1)
            failed[current] = set()
        elif current and _ERROR.match(line):
            failed[current] = None
        elif current and (match := _FAIL.match(line)) and failed[current] is not None:
            failed[current].add(match.group(1))  # type: ignore[union-attr]
    return failed


def passes_per_category(tests: list[Test], failed: set[str] | None) -> dict[str, int]:
    """Passed tests per category (see `Test.categories`)."""
    passed = Counter[str]()
    for test in tests:
        if failed is not None and test.id not in failed:
            passed.update(test.categories)
    return dict(passed)


def category_sizes(tests: list[Test]) -> dict[str, int]:
    return dict(Counter(c for t in tests for c in t.categories))
