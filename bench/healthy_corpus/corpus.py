"""Loading the healthy corpus: the committed pages, or every page where rebuilt locally."""

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.healthy_corpus.build import DATA, LOCAL_ALL, LOCAL_LOOPS

COMMITTED = DATA / "healthy.jsonl.gz"
LOOPS = DATA / "loops.jsonl.gz"


def read_pages(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def load_pages(everything: bool = False) -> list[dict[str, Any]]:
    """The committed pages; with `everything`, the local rebuild that adds copyleft sources
    (`python -m bench healthy-corpus`), when it exists."""
    path = LOCAL_ALL if everything and LOCAL_ALL.exists() else COMMITTED
    return list(read_pages(path))


def load_loops(everything: bool = False) -> list[dict[str, Any]]:
    """Pages collected as healthy that were read and found to loop (`loop` says how)."""
    path = LOCAL_LOOPS if everything and LOCAL_LOOPS.exists() else LOOPS
    return list(read_pages(path)) if path.exists() else []
