"""score_output on the shared dev corpus of real degenerate and healthy outputs.

The corpus lives outside the repository (`../shared/corpus/degeneration_dev.jsonl`, or under
`$FOLIO_SHARED_DIR`); the test is skipped where it is absent.
"""

import json
import os
from pathlib import Path

import pytest

from app.degeneration import score_output

CORPUS_NAME = Path("corpus") / "degeneration_dev.jsonl"


def corpus_path() -> Path:
    shared = os.environ.get("FOLIO_SHARED_DIR")
    root = Path(shared) if shared else Path(__file__).resolve().parents[1].parent / "shared"
    return root / CORPUS_NAME


@pytest.mark.corpus
def test_dev_corpus_recall_and_false_positive_rate() -> None:
    path = corpus_path()
    if not path.is_file():
        pytest.skip(f"dev corpus not found at {path}")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    degenerate = [row for row in rows if row["label"] == "degenerate"]
    healthy = [row for row in rows if row["label"] == "healthy"]
    assert degenerate and healthy
    missed = [row["id"] for row in degenerate if not score_output(row["text"]).degenerate]
    flagged = [row["id"] for row in healthy if score_output(row["text"]).degenerate]
    recall = 1 - len(missed) / len(degenerate)
    false_positive_rate = len(flagged) / len(healthy)
    assert recall >= 0.95, f"missed: {missed}"
    assert false_positive_rate <= 0.02, f"false positives: {flagged}"
