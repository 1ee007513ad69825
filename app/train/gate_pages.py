"""The pages the promotion gate reads: the held-out pairs' pages (the base looped there; the
chosen side is the accepted answer) and the pages the batch read without looping
(`healthy.jsonl` of each export folder; never trained on). Plain Python: no torch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import TrainInputError
from app.train.healthy import HEALTHY_FILE
from app.train.pairs import Pair


@dataclass(frozen=True)
class GatePage:
    """One held-out page: the request as the batch sent it and the answer it accepted."""

    key: str  # document hash (or name) and page number
    images: tuple[Path, ...]
    prompt: list[dict[str, Any]]  # chat messages, the image as a placeholder
    answer: str
    origin: str  # "looped" (a held-out pair's page) or "healthy"


def gate_pages(
    folders: Sequence[Path], held_out: Sequence[Pair], trained: Sequence[Pair], limit: int
) -> list[GatePage]:
    """Held-out pairs' pages first, then up to `limit` pages in all; a page that was trained
    on is never among them."""
    seen = {p.page_key for p in trained}
    pages: list[GatePage] = []
    for pair in held_out:
        if pair.page_key not in seen:
            seen.add(pair.page_key)
            pages.append(_from_pair(pair))
    for folder in folders:
        for page in _healthy(folder):
            if page.key not in seen:
                seen.add(page.key)
                pages.append(page)
    return pages[:limit]


def _from_pair(pair: Pair) -> GatePage:
    chosen = message_text(pair.record["chosen"])
    return GatePage(pair.page_key, tuple(pair.image_paths), pair.record["prompt"], chosen, "looped")


def _healthy(folder: Path) -> list[GatePage]:
    source = (folder if folder.is_dir() else folder.parent) / HEALTHY_FILE
    if not source.is_file():
        return []
    pages = []
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            meta = record.get("metadata") or {}
            key = f"{meta.get('document_sha256') or meta.get('document')}#{meta.get('page')}"
            images = tuple((source.parent / p).resolve() for p in record["images"])
            page = GatePage(key, images, record["prompt"], str(record["answer"]), "healthy")
        except (ValueError, KeyError, TypeError) as exc:
            raise TrainInputError(f"{source}:{number}: not a healthy page ({exc})") from exc
        if all(p.is_file() for p in images):
            pages.append(page)
    return pages


def message_text(messages: Any) -> str:
    """The text of a TRL completion: a string, or assistant messages with text parts."""
    if isinstance(messages, str):
        return messages
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        parts.extend(str(c.get("text", "")) for c in content or [] if c.get("type") == "text")
    return "".join(parts)
