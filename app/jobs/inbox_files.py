"""The upload folder's files: when one is complete, the name it is claimed under, and its
move to done/ or failed/ (with its reason)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from app.pipeline.ingest_rows import UniqueNames

# Looks an unfinished-looking PDF must hold still for (10 x watch_poll_s: 20 s by default),
# against one for any other file: a copy that pauses mid-way is not taken half written.
INCOMPLETE_LOOKS = 10
_TAIL_BYTES = 1024  # a PDF's `%%EOF` is its last line; some writers pad a little after it
# A file name holds 255 bytes: room for `-NN` and `.reason.txt` (11) after a claimed name.
_MAX_NAME_BYTES = 230


@dataclass
class StableFiles:
    """Files whose size and modification time held still between two looks; a file that
    starts as a PDF but does not end as one (no `%%EOF` in its last KiB: a copy paused
    mid-way) must hold still for `INCOMPLETE_LOOKS` looks before it is taken as it is."""

    _seen: dict[Path, tuple[int, int, int]] = field(default_factory=dict)

    def look(self, paths: list[Path]) -> list[Path]:
        now: dict[Path, tuple[int, int, int]] = {}
        for path in paths:
            try:
                stat = path.lstat()  # a link as itself: it is never followed
            except FileNotFoundError:
                continue
            signature = (stat.st_size, stat.st_mtime_ns)
            before = self._seen.get(path)
            still = before[2] + 1 if before and before[:2] == signature else 0
            now[path] = (*signature, still)
        self._seen = now
        ready = [p for p, (_, _, still) in now.items() if still >= _looks_needed(p)]
        return sorted(ready)


def _looks_needed(path: Path) -> int:
    return INCOMPLETE_LOOKS if _unfinished_pdf(path) else 1


def _unfinished_pdf(path: Path) -> bool:
    """A file that begins as a PDF and has no `%%EOF` near its end: still being written, or
    cut short (then it is taken after `INCOMPLETE_LOOKS` looks, and fails or keeps what
    MuPDF can repair)."""
    if path.is_symlink():
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(1024)
            handle.seek(max(0, path.stat().st_size - _TAIL_BYTES))
            tail = handle.read()
    except OSError:
        return False
    return b"%PDF-" in head and b"%%EOF" not in tail


def unique_names(files: list[Path]) -> list[str]:
    """Document names from file names, made unique (`a.pdf`, `a.PDF` -> `a`, `a-2`)."""
    names = UniqueNames()
    return [names.take(path.stem if path.suffix.lower() == ".pdf" else path.name) for path in files]


def claimed_name(name: str) -> str:
    """A file's name in processing/, done/ and failed/: valid UTF-8 (a name that is not keeps
    a `_` for each stray byte) and short enough for `-NN` and `.reason.txt` after it."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace").replace("\ufffd", "_")
    data = text.encode()
    if len(data) <= _MAX_NAME_BYTES:
        return text
    suffix = Path(text).suffix if len(Path(text).suffix) <= 16 else ""
    digest = hashlib.sha256(data).hexdigest()[:12]
    head = data[: _MAX_NAME_BYTES - len(suffix.encode()) - 13].decode("utf-8", "ignore")
    return f"{head}~{digest}{suffix}"


def free_name(folder: Path, name: str) -> Path:
    """`folder / name`, or `name-2`, `name-3` ... where that is taken."""
    stem, suffix = Path(name).stem, Path(name).suffix
    target, n = folder / name, 1
    while target.exists() or target.is_symlink():
        n += 1
        target = folder / f"{stem}-{n}{suffix}"
    return target


def move_to(path: Path, folder: Path, reason: str | None) -> None:
    # The reason file is written before the rename: a crash in between leaves the original in
    # processing/, and the next run writes the same reason file again and moves it.
    folder.mkdir(parents=True, exist_ok=True)
    target = free_name(folder, claimed_name(path.name))
    if reason is not None:
        (folder / f"{target.name}.reason.txt").write_text(reason + "\n", encoding="utf-8")
    os.replace(path, target)
