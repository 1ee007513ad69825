"""`python -m bench.healthy_corpus.harvest`: build the harvested split from its pinned commits.

Read like the healthy corpus (`build`: bare git mirrors under `--mirror-root`, always at the
pinned commit, the same chunking), kept apart from it (`data/harvest.jsonl.gz`, not joined to
`data/healthy.jsonl.gz`): the split measures the detector as frozen before it changes.

What is not a healthy real page is screened out, by these rules and no other:

1. Selected files only: outputs or transcriptions of real documents. Files named for the
   unit test that wrote them and files repeating another file's page are excluded by path
   (`HarvestSelector.exclude`); JSON is never selected (SDK responses and coordinate dumps:
   Textract's saved responses, tabula's cell JSON, extractous' metadata).
2. A page whose text parses as JSON is dropped (a dump that slipped past rule 1).
3. A page with fewer than `MIN_TEXT_CHARS` characters other than white space is dropped:
   too little text to hold or to be mistaken for a loop (the detector's dev set uses the
   same floor, `devset_sources._MIN_CHARS`).
4. A page whose text is that of an earlier page, or of a page of the healthy corpus, is kept
   once (in the corpus) or not at all (here).
5. A page that embeds a file as base64 (`data:...;base64,` and `DATA_URI_CHARS` characters or
   more) is dropped: an attachment the converter inlined, not text read from the page. This
   rule was added after reading the frozen detector's flags (one zerox page, the only one it
   drops); the bench reports the figure with those pages counted as flagged too.

Each page records its input document where the commit holds it (`input`: path, kind, page
number where known), for grounding against the page's own text layer.
"""

import argparse
import functools
import hashlib
import json
import re
import subprocess
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.healthy_corpus.build import (
    DATA,
    DEFAULT_MIRRORS,
    LOCAL_ALL,
    _git,
    file_format,
    git_dir,
    licence_section,
    page_record,
    selected_files,
    write_jsonl_gz,
)
from bench.healthy_corpus.chunking import page_chunks
from bench.healthy_corpus.corpus import COMMITTED, read_pages
from bench.healthy_corpus.harvest_readers import PAGED_READERS, READERS
from bench.healthy_corpus.harvest_sources import (
    FREEZE_COMMIT,
    HARVEST,
    HarvestSelector,
    HarvestSource,
)

HARVEST_COMMITTED = DATA / "harvest.jsonl.gz"
HARVEST_MANIFEST = DATA / "harvest_manifest.json"
HARVEST_LICENSES = DATA / "HARVEST_LICENSES.md"
HARVEST_ALL = LOCAL_ALL.with_name("harvest_all.jsonl.gz")
MIN_TEXT_CHARS = 200
DATA_URI_CHARS = 200
_SPACE = re.compile(r"\s+")
_DATA_URI = re.compile(rf"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]{{{DATA_URI_CHARS},}}")


def load_harvest(everything: bool = False) -> list[dict[str, Any]]:
    """The committed harvested pages; with `everything`, the local rebuild that adds the
    sources not committed, when it exists."""
    path = HARVEST_ALL if everything and HARVEST_ALL.exists() else HARVEST_COMMITTED
    return list(read_pages(path)) if path.exists() else []


def screened_out(text: str) -> str:
    """Why `text` is not taken as a healthy page (rules 2, 3 and 5), or ""."""
    if len(_SPACE.sub("", text)) < MIN_TEXT_CHARS:
        return "short"
    if _DATA_URI.search(text):
        return "embedded file"
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            json.loads(stripped)
        except ValueError:
            return ""
        return "json"
    return ""


def find_input(tree: dict[str, str], path: str, selector: HarvestSelector) -> str | None:
    """The input document of the output at `path`, where the commit holds it (`tree`: every
    path of the commit, and every file name under `**/` to the first path holding it)."""
    if selector.pair is None:
        return None
    pattern, replacement = selector.pair
    if not re.match(pattern, path):
        return None
    stem = re.sub(pattern, replacement, path)
    return next((tree[stem + ext] for ext in selector.pair_extensions if stem + ext in tree), None)


@functools.lru_cache(maxsize=64)
def pdf_pages(gitdir: Path, commit: str, path: str) -> int | None:
    """Pages of the PDF at `path`, or None where the mirror lacks its bytes (a snapshot leaves
    out files of 4 MiB and more) or they are no PDF."""
    import pymupdf  # only where a PDF is paired

    try:
        raw = _git(gitdir, "show", f"{commit}:{path}")
        with pymupdf.open(stream=raw, filetype="pdf") as document:
            return int(document.page_count)
    except (subprocess.CalledProcessError, RuntimeError):
        return None


def input_record(
    gitdir: Path,
    source: HarvestSource,
    path: str | None,
    chunks: int,
    number: int | None,
) -> dict[str, Any] | None:
    """Where the page's document lies, and which page of it this is where that is known: an
    image is one page; a PDF's page is the one the output names (`number`, checked against
    the PDF where the mirror holds it), or page 1 of a one-page PDF read as one chunk."""
    if path is None:
        return None
    if not path.lower().endswith(".pdf"):
        kind = "image" if path.lower().endswith((".png", ".jpg", ".jpeg", ".tif")) else "file"
        return {"path": path, "kind": kind, "page": 1 if kind == "image" else None}
    pages = pdf_pages(gitdir, source.commit, path)
    page = number if number is not None and (pages is None or number <= pages) else None
    if page is None and pages == 1 and chunks == 1:
        page = 1
    return {"path": path, "kind": "pdf", "pages": pages, "page": page}


def source_pages(mirror_root: Path, source: HarvestSource) -> Iterator[dict[str, Any]]:
    """Every page of `source` before screening, with its input document."""
    gitdir = git_dir(mirror_root, source.repo)
    listing = _git(gitdir, "ls-tree", "-r", "-l", source.commit).decode()
    paths = sorted(line.split("\t", 1)[1] for line in listing.splitlines())
    tree = {f"**/{Path(path).name}": path for path in reversed(paths)} | {p: p for p in paths}
    taken: Counter[str] = Counter()
    for selector, path in selected_files(gitdir, source):
        assert isinstance(selector, HarvestSelector)
        taken[selector.pattern] += 1
        if (taken[selector.pattern] - 1) % selector.files_every:
            continue
        raw = _git(gitdir, "show", f"{source.commit}:{path}")
        document = find_input(tree, path, selector)
        try:
            texts = _file_pages(raw, path, selector)
        except (UnicodeDecodeError, ValueError):  # not UTF-8, or not well-formed XML
            continue
        fmt = file_format(path, selector)
        # every n-th page of a long document (`HarvestSelector.every`), indexed as cut
        for index, (number, text) in list(enumerate(texts))[:: selector.every]:
            page = page_record(source, selector, path, fmt, text, index, len(texts))
            page["redistributable"] = source.redistributable and selector.committed
            page["reader"] = selector.reader
            page["input"] = input_record(gitdir, source, document, len(texts), number)
            yield page


def _file_pages(raw: bytes, path: str, selector: HarvestSelector) -> list[tuple[int | None, str]]:
    """(page number in the input where known, text) for each page a file holds: a paged
    reader's pages; one page for layout XML and paged outputs; else page-sized chunks, numbered
    where the output marks its pages (form feeds) and each chunk is one of them."""
    if selector.reader in PAGED_READERS:
        return list(PAGED_READERS[selector.reader](raw).items())
    text = READERS[selector.reader](raw)
    if selector.reader != "text" or selector.paged:
        return [(None, text)]
    chunks = page_chunks(text)
    marked = "\f" in text and len(text.split("\f")) == len(chunks)
    return [(index + 1 if marked else None, chunk) for index, chunk in enumerate(chunks)]


def build(mirror_root: Path) -> tuple[list[dict[str, Any]], Counter[str]]:
    """(the harvested pages, what was screened out and why)."""
    corpus = [path for path in (COMMITTED, LOCAL_ALL) if path.exists()]
    seen = {_digest(page["text"]) for path in corpus for page in read_pages(path)}
    pages: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    for source in HARVEST:
        for page in source_pages(mirror_root, source):
            reason = screened_out(page["text"])
            digest = _digest(page["text"])
            if not reason and digest in seen:
                reason = "duplicate"
            if reason:
                dropped[f"{page['source']}: {reason}"] += 1
                continue
            seen.add(digest)
            pages.append(page)
    return pages, dropped


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def manifest(pages: Sequence[dict[str, Any]], dropped: Counter[str]) -> dict[str, Any]:
    def of(source: HarvestSource) -> list[dict[str, Any]]:
        prefix = f"{source.repo}@{source.commit}:"
        return [page for page in pages if page["origin"].startswith(prefix)]

    return {
        "freeze_commit": FREEZE_COMMIT,
        "sources": [
            {
                "repo": source.repo,
                "commit": source.commit,
                "licence": source.licence,
                "committed": source.redistributable,
                "note": source.note,
                "paths": [selector.pattern for selector in source.selectors],
                "pages": len(of(source)),
                "pages_committed": sum(1 for page in of(source) if page["redistributable"]),
                "paired": dict(
                    Counter(page["input"]["kind"] for page in of(source) if page["input"])
                ),
                "pdf_page_known": sum(
                    1
                    for page in of(source)
                    if page["input"] and page["input"]["kind"] == "pdf" and page["input"]["page"]
                ),
            }
            for source in HARVEST
        ],
        "pages": len(pages),
        "pages_committed": sum(1 for page in pages if page["redistributable"]),
        "screened_out": dict(sorted(dropped.items())),
        "min_text_chars": MIN_TEXT_CHARS,
        "chars": sum(page["chars"] for page in pages),
    }


def licence_notices(mirror_root: Path) -> str:
    """Markdown with the licence text of every committed source, at its pinned commit."""
    parts = ["# Licences of the committed harvested split\n"]
    for source in HARVEST:
        if not source.redistributable:
            continue
        gitdir = git_dir(mirror_root, source.repo)
        parts.append(licence_section(gitdir, source, source.licence_file))
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.healthy_corpus.harvest")
    parser.add_argument("--mirror-root", type=Path, default=DEFAULT_MIRRORS)
    args = parser.parse_args(argv)
    pages, dropped = build(args.mirror_root)
    write_jsonl_gz(HARVEST_COMMITTED, [page for page in pages if page["redistributable"]])
    write_jsonl_gz(HARVEST_ALL, pages)
    summary = manifest(pages, dropped)
    HARVEST_MANIFEST.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    HARVEST_LICENSES.write_text(licence_notices(args.mirror_root), encoding="utf-8")
    print(json.dumps({k: summary[k] for k in ("pages", "pages_committed", "screened_out")}))
    return summary


if __name__ == "__main__":
    main()
