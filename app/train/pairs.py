"""Reading `export-dpo` folders: pairs with their images checked, and the held-out split.

The split is by page, not by pair: a page seen in two jobs is either trained on or held out,
never both, so `folio eval` on the held-out pages measures pages the model never saw.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import TrainInputError

PAIRS_FILE = "train.jsonl"


@dataclass(frozen=True)
class Pair:
    """One preference pair, its image paths made absolute."""

    record: dict[str, Any]
    folder: Path

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(self.record.get("metadata") or {})

    @property
    def page_key(self) -> str:
        """The page this pair shows: the document's content hash when known, else its name."""
        meta = self.metadata
        return f"{meta.get('document_sha256') or meta.get('document')}#{meta.get('page')}"

    @property
    def image_paths(self) -> list[Path]:
        return [Path(p) for p in self.record["images"]]

    @property
    def loop_kind(self) -> str:
        return str((self.metadata.get("rejected_verdict") or {}).get("kind") or "unknown")

    @property
    def chosen_source(self) -> str:
        return str(self.metadata.get("chosen_by") or "unknown")


@dataclass(frozen=True)
class Split:
    train: list[Pair]
    held_out: list[Pair]


def load_pairs(folders: Sequence[Path]) -> list[Pair]:
    """Every pair of every folder; raises TrainInputError naming what is wrong."""
    if not folders:
        raise TrainInputError("no pairs folder given")
    pairs: list[Pair] = []
    for folder in folders:
        pairs.extend(_read_folder(folder))
    if not pairs:
        raise TrainInputError(f"no pairs in {', '.join(map(str, folders))}")
    missing = [str(p) for pair in pairs for p in pair.image_paths if not p.is_file()]
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        raise TrainInputError(f"{len(missing)} image(s) of the pairs are missing: {shown}")
    return pairs


def _read_folder(folder: Path) -> list[Pair]:
    source = folder / PAIRS_FILE if folder.is_dir() else folder
    if not source.is_file():
        raise TrainInputError(f"{folder}: no {PAIRS_FILE} (write one with `folio export-dpo`)")
    pairs = []
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            images = [str((source.parent / p).resolve()) for p in record["images"]]
            _ = record["prompt"], record["chosen"], record["rejected"]
        except (ValueError, KeyError, TypeError) as exc:
            raise TrainInputError(f"{source}:{number}: not a preference pair ({exc})") from exc
        pairs.append(Pair({**record, "images": images}, source.parent))
    return pairs


def split_held_out(pairs: Sequence[Pair], share: float, seed: int) -> Split:
    """Hold out `share` of the pages (at least one when there are two or more pages)."""
    keys = sorted({p.page_key for p in pairs}, key=lambda k: _rank(k, seed))
    count = round(len(keys) * share)
    if share > 0 and count == 0 and len(keys) > 1:
        count = 1
    held = set(keys[:count])
    if len(held) == len(keys):
        raise TrainInputError(f"held-out share {share} leaves no page to train on")
    return Split(
        train=[p for p in pairs if p.page_key not in held],
        held_out=[p for p in pairs if p.page_key in held],
    )


def _rank(key: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def held_out_pages(pairs: Sequence[Pair]) -> list[dict[str, Any]]:
    """The held-out pages as `folio eval --pages` reads them: one entry per page."""
    pages: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        meta = pair.metadata
        entry = pages.setdefault(
            pair.page_key,
            {
                "document": meta.get("document"),
                "document_sha256": meta.get("document_sha256"),
                "page": meta.get("page"),
                "page_ids": [],
            },
        )
        page_id = f"{meta.get('job_id')}:{meta.get('page_id')}"
        if page_id not in entry["page_ids"]:
            entry["page_ids"].append(page_id)
    return sorted(pages.values(), key=lambda e: (str(e["document"]), int(e["page"] or 0)))


def pair_counts(pairs: Sequence[Pair]) -> dict[str, dict[str, int]]:
    return {
        "by_loop_kind": dict(Counter(p.loop_kind for p in pairs).most_common()),
        "by_chosen_source": dict(Counter(p.chosen_source for p in pairs).most_common()),
    }


def data_hashes(folders: Sequence[Path], pairs: Sequence[Pair]) -> dict[str, str]:
    """sha256 of each pairs file and of all images together: which data made the model."""
    hashes = {}
    for folder in folders:
        source = folder / PAIRS_FILE if folder.is_dir() else folder
        hashes[str(source)] = hashlib.sha256(source.read_bytes()).hexdigest()
    images = hashlib.sha256()
    for path in sorted({p for pair in pairs for p in pair.image_paths}):
        images.update(hashlib.sha256(path.read_bytes()).digest())
    hashes["images"] = images.hexdigest()
    return hashes
