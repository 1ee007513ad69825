"""Which pages an evaluation runs on: all pages under SOURCE, or the pages a list names
(train-dpo's held_out_pages.json), each cut out as a one-page PDF so every arm sees exactly them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import ConfigError
from app.pdf.extract import extract_page
from app.pipeline.ingest_rows import document_name, sha256_of
from app.storage.folder import discover_pdfs


@dataclass(frozen=True)
class PageOrigin:
    """Where an evaluated page comes from: its document under SOURCE and page number there."""

    document: str
    path: Path
    page: int
    pages: int  # pages of the whole document


@dataclass(frozen=True)
class PageSet:
    source: Path  # what each arm's job ingests
    origins: dict[str, PageOrigin]  # eval document name -> origin of its page 1, when cut

    def origin(self, eval_document: str, eval_page: int, eval_path: str, pages: int) -> PageOrigin:
        cut = self.origins.get(eval_document)
        if cut is not None:
            return cut
        return PageOrigin(eval_document, Path(eval_path), eval_page, pages)


def select_pages(source: Path, pages_file: Path | None, work: Path) -> PageSet:
    if pages_file is None:
        return PageSet(source, {})
    wanted = _read_pages_file(pages_file)
    pdfs = {document_name(p, source): p for p in discover_pdfs(source)}
    hashes: dict[str, str] = {}
    folder = work / "pages"
    folder.mkdir(parents=True, exist_ok=True)
    origins = {}
    for entry in wanted:
        name, path = _find(entry, pdfs, hashes)
        number = int(entry["page"])
        cut_name = f"{name}__p{number}"
        pages = extract_page(path, number, folder / f"{cut_name}.pdf")
        origins[cut_name] = PageOrigin(name, path, number, pages)
    return PageSet(folder, origins)


def _read_pages_file(path: Path) -> list[dict[str, Any]]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--pages {path}: {exc}") from exc
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"--pages {path}: expected a non-empty list of {{document, page}}")
    return entries


def _find(entry: dict[str, Any], pdfs: dict[str, Path], hashes: dict[str, str]) -> tuple[str, Path]:
    """The PDF an entry names: by content hash when it has one, else by document name."""
    digest = entry.get("document_sha256")
    if digest:
        for name, path in pdfs.items():
            if name not in hashes:
                hashes[name] = sha256_of(path) or ""
            if hashes[name] == digest:
                return name, path
    name = str(entry.get("document"))
    if name in pdfs:
        return name, pdfs[name]
    raise ConfigError(f"page list names {name!r} page {entry.get('page')}, not found under SOURCE")
