"""`python -m bench healthy-corpus`: rebuild the healthy corpus from its pinned commits.

Each source of `sources.SOURCES` is read from a bare git mirror of its repository at
`<mirror-root>/<owner>+<name>/repo` (what the `fetch` tool brings; `git clone --bare
https://github.com/<owner>/<name> <mirror-root>/<owner>+<name>/repo` makes the same), always at
the pinned commit, so two builds give the same bytes. Writes:

- `data/healthy.jsonl.gz`: the pages whose licence allows redistribution (committed);
- `data/loops.jsonl.gz`: pages read and found to loop (`read_loops.json`), committed alike;
- `data/manifest.json`: sources, commits, licences, counts by source, producer and shape;
- `data/LICENSES.md`: the licence file of every committed source at its commit (the notices
  MIT, BSD and Apache-2.0 ask to keep with copies);
- `out/healthy_corpus/healthy_all.jsonl.gz` and `loops_all.jsonl.gz` (not committed): every
  page, copyleft sources too.

Pages identical to an earlier one (the same file under several test folders) are kept once.
"""

import argparse
import fnmatch
import gzip
import hashlib
import json
import subprocess
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.healthy_corpus.chunking import MAX_CHARS, page_chunks
from bench.healthy_corpus.sources import READ_LOOPS, SOURCES, Selector, Source
from bench.healthy_corpus.tagging import shape_tags

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
LOCAL_ALL = HERE.parents[1] / "out" / "healthy_corpus" / "healthy_all.jsonl.gz"
LOCAL_LOOPS = LOCAL_ALL.with_name("loops_all.jsonl.gz")
DEFAULT_MIRRORS = Path("/work/.mirror")
_EXTENSION_FORMATS = {
    ".md": "markdown",
    ".html": "html",
    ".htm": "html",
    ".dt": "doctags",
    ".json": "json",
    ".txt": "text",
}


class MirrorMissing(RuntimeError):
    """A source's repository has no mirror under the mirror root."""


def git_dir(mirror_root: Path, repo: str) -> Path:
    path = mirror_root / repo.replace("/", "+") / "repo"
    if not path.is_dir():
        raise MirrorMissing(
            f"{repo}: no mirror at {path}; bring it with "
            f"`git clone --bare https://github.com/{repo} {path}`"
        )
    return path


def _git(gitdir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", *args], check=True, capture_output=True
    ).stdout


def selected_files(gitdir: Path, source: Source) -> Iterator[tuple[Selector, str]]:
    """(selector, path) for every file of the pinned commit a selector takes, in path order."""
    listing = _git(gitdir, "ls-tree", "-r", "-l", source.commit).decode()
    taken: set[str] = set()
    for line in sorted(listing.splitlines(), key=lambda row: row.split("\t", 1)[1]):
        meta, path = line.split("\t", 1)
        size = meta.split()[3]
        for selector in source.selectors:
            if path in taken or not fnmatch.fnmatch(path, selector.pattern):
                continue
            if any(fnmatch.fnmatch(path, skip) for skip in selector.exclude):
                continue
            if not size.isdigit() or int(size) > selector.max_bytes:
                continue
            taken.add(path)
            yield selector, path


def file_format(path: str, selector: Selector) -> str:
    if selector.fmt:
        return selector.fmt
    if path.endswith(".doctags.txt"):
        return "doctags"
    return _EXTENSION_FORMATS.get(Path(path).suffix, "text")


def json_chunks(text: str) -> list[str]:
    """A JSON list of elements cut into page-sized JSON lists (each valid JSON on its own),
    written back as the converter writes them (two-space indent, characters unescaped)."""
    elements = json.loads(text)
    if not isinstance(elements, list):
        return [text]
    chunks: list[str] = []
    group: list[Any] = []
    size = 0
    for element in elements:
        length = len(json.dumps(element, indent=2, ensure_ascii=False))
        if group and size + length > MAX_CHARS:
            chunks.append(json.dumps(group, indent=2, ensure_ascii=False))
            group, size = [], 0
        group.append(element)
        size += length
    if group:
        chunks.append(json.dumps(group, indent=2, ensure_ascii=False))
    return chunks


def source_pages(mirror_root: Path, source: Source) -> Iterator[tuple[str, dict[str, Any]]]:
    """(loops-only reason, page) for every page of `source` (the reason is empty for files
    whose pages are healthy unless read as loops)."""
    gitdir = git_dir(mirror_root, source.repo)
    for selector, path in selected_files(gitdir, source):
        raw = _git(gitdir, "show", f"{source.commit}:{path}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if not text.strip() or text.startswith("version https://git-lfs"):
            continue
        fmt = file_format(path, selector)
        if fmt == "json":
            chunks = json_chunks(text)
        elif selector.paged:
            chunks = [text]
        else:
            chunks = page_chunks(text)
        for index, chunk in enumerate(chunks):
            yield (
                selector.loops_only,
                page_record(source, selector, path, fmt, chunk, index, len(chunks)),
            )


def page_record(
    source: Source, selector: Selector, path: str, fmt: str, text: str, index: int, count: int
) -> dict[str, Any]:
    origin = f"{source.repo}@{source.commit}:{path}"
    return {
        "id": hashlib.sha1(f"{origin}#{index}".encode()).hexdigest()[:12],
        "source": source.repo,
        "producer": selector.producer,
        "origin": origin,
        "chunk": index,
        "chunks": count,
        "licence": source.licence,
        "redistributable": source.redistributable,
        "format": fmt,
        "tags": shape_tags(text, fmt),
        "chars": len(text),
        "text": text,
    }


def build(mirror_root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(healthy pages, pages found to loop) from every source, duplicates dropped."""
    healthy, loops, seen = [], [], set()
    for source in SOURCES:
        for loops_only, page in source_pages(mirror_root, source):
            digest = hashlib.sha1(page["text"].encode()).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            note = READ_LOOPS.get(f"{page['origin']}#{page['chunk']}")
            if note is not None:
                loops.append({**page, "loop": note})
            elif not loops_only:
                healthy.append(page)
    return healthy, loops


def write_jsonl_gz(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Rows as gzipped JSON lines, byte-identical for identical rows (no timestamp)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(payload)


def manifest(healthy: Sequence[dict[str, Any]], loops: Sequence[dict[str, Any]]) -> dict[str, Any]:
    committed = [page for page in healthy if page["redistributable"]]
    return {
        "sources": [
            {
                "repo": source.repo,
                "commit": source.commit,
                "licence": source.licence,
                "committed": source.redistributable,
                "paths": [selector.pattern for selector in source.selectors],
                "pages": sum(
                    1
                    for page in healthy
                    if page["origin"].startswith(f"{source.repo}@{source.commit}:")
                ),
            }
            for source in SOURCES
        ],
        "pages": len(healthy),
        "pages_committed": len(committed),
        "loops": len(loops),
        "by_producer": _counts(healthy, lambda page: [f"{page['source']} / {page['producer']}"]),
        "by_shape": _counts(healthy, lambda page: page["tags"]),
        "by_shape_committed": _counts(committed, lambda page: page["tags"]),
        "chars": sum(page["chars"] for page in healthy),
    }


def _counts(pages: Sequence[dict[str, Any]], keys: Any) -> dict[str, int]:
    counter: Counter[str] = Counter()
    for page in pages:
        counter.update(keys(page))
    return dict(counter.most_common())


LICENCE_FILES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "COPYING")


def licence_notices(mirror_root: Path) -> str:
    """Markdown with the licence file of every committed source, at its pinned commit."""
    parts = ["# Licences of the committed healthy corpus\n"]
    for source in SOURCES:
        if not source.redistributable:
            continue
        gitdir = git_dir(mirror_root, source.repo)
        names = _git(gitdir, "ls-tree", "--name-only", source.commit).decode().splitlines()
        path = next(name for name in LICENCE_FILES if name in names)
        parts.append(licence_section(gitdir, source, path))
    return "\n".join(parts)


def licence_section(gitdir: Path, source: Source, path: str) -> str:
    """One source's licence file at its pinned commit, as the licence notices quote it."""
    text = _git(gitdir, "show", f"{source.commit}:{path}").decode("utf-8").strip()
    return (
        f"## {source.repo} ({source.licence})\n\n"
        f"`{source.repo}@{source.commit}:{path}`\n\n```text\n{text}\n```\n"
    )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench healthy-corpus")
    parser.add_argument("--mirror-root", type=Path, default=DEFAULT_MIRRORS)
    args = parser.parse_args(argv)
    healthy, loops = build(args.mirror_root)
    write_jsonl_gz(DATA / "healthy.jsonl.gz", [p for p in healthy if p["redistributable"]])
    write_jsonl_gz(DATA / "loops.jsonl.gz", [p for p in loops if p["redistributable"]])
    write_jsonl_gz(LOCAL_ALL, healthy)
    write_jsonl_gz(LOCAL_LOOPS, loops)
    summary = manifest(healthy, loops)
    (DATA / "manifest.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (DATA / "LICENSES.md").write_text(licence_notices(args.mirror_root), encoding="utf-8")
    print(json.dumps({k: summary[k] for k in ("pages", "pages_committed", "loops")}))
    return summary
