"""What a job's result files were when they were written: each file's size and SHA-256, kept
in the job's `summary.json` beside them (each document's `files`), which is written last.

A rerun leaves an earlier job's files in place only when they still are those bytes: a file
cut short by a full disk, or changed since, is written again, never called done.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from app.storage.targets import ResultTarget

SUMMARY = "summary.json"
# The largest summary.json read back: ~1 KB a document, so room for a job of 100,000.
MAX_SUMMARY_BYTES = 128 * 2**20


@dataclass(frozen=True)
class FileDigest:
    size: int
    sha256: str

    def as_json(self) -> dict[str, Any]:
        return {"bytes": self.size, "sha256": self.sha256}


def digest_of(data: bytes) -> FileDigest:
    return FileDigest(len(data), hashlib.sha256(data).hexdigest())


def recorded_files(target: ResultTarget) -> dict[str, FileDigest]:
    """Every file the `summary.json` now at `target` says was written, by name; none when it
    is missing, unreadable or from before files were recorded."""
    data = target.read(SUMMARY, MAX_SUMMARY_BYTES)
    try:
        summary = json.loads(data) if data is not None else {}
    except ValueError:  # cut short itself: nothing it says can be trusted
        return {}
    found: dict[str, FileDigest] = {}
    documents = summary.get("documents") if isinstance(summary, dict) else None
    for document in documents if isinstance(documents, list) else []:
        files = document.get("files") if isinstance(document, dict) else None
        for name, fact in (files if isinstance(files, dict) else {}).items():
            try:
                found[str(name)] = FileDigest(int(fact["bytes"]), str(fact["sha256"]))
            except (KeyError, TypeError, ValueError):
                continue
    return found


def still_whole(target: ResultTarget, name: str, recorded: FileDigest | None) -> bool:
    """Whether the file `name` at `target` is still exactly the bytes that were recorded."""
    if recorded is None:
        return False
    data = target.read(name, recorded.size)
    return data is not None and digest_of(data) == recorded
