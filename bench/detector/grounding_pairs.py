"""Where `bench detector-grounding` gets each healthy answer's page text (`grounding` says why).

Each pair is a dict: source, producer, page, the answer's text, and `layer`: the page's text,
or a function that reads it (a scan, read by Folio's verdict reader only where a verdict asks).
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.degeneration.grounding import grounding_tokens
from bench.detector.grounding_scans import SOURCE_LANGS, ScanReader
from bench.healthy_corpus.build import DEFAULT_MIRRORS, MirrorMissing, git_dir
from bench.healthy_corpus.corpus import load_pages

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "corpus"
OLMOCR_SAMPLE = SHARED / "olmocr_bench_sample"
MIN_CHARS = 25  # the pipeline's default `textlayer_min_chars`
ODL = "opendataloader-project/opendataloader-bench"
PYPDF = "py-pdf/benchmarks"
OLMOCR = "allenai/olmocr"
# Text-layer engines of opendataloader-bench: what a page's text layer gives, read from its PDF.
LAYER_ENGINE, LAYER_ENGINE_ELSE = "pymupdf4llm", "opendataloader"
_ODL_ID = re.compile(r"/(\d{14})\.md$")
SCAN_READ = "scan read at the verdict"


def odl_pairs() -> Iterator[dict[str, Any]]:
    """opendataloader-bench's readings of each page with that page's text layer."""
    pages = [p for p in load_pages() if p["source"] == ODL]
    layers: dict[tuple[str, str], str] = {}
    for page in pages:
        if (found := _ODL_ID.search(page["origin"])) and page["producer"] in (
            LAYER_ENGINE,
            LAYER_ENGINE_ELSE,
        ):
            layers[(page["producer"], found.group(1))] = page["text"]
    for page in pages:
        found = _ODL_ID.search(page["origin"])
        if not found:
            continue
        engine = LAYER_ENGINE_ELSE if page["producer"] == LAYER_ENGINE else LAYER_ENGINE
        yield {
            "source": "opendataloader-bench",
            "producer": page["producer"],
            "page": found.group(1),
            "text": page["text"],
            "layer": layers.get((engine, found.group(1)), ""),
        }


def olmocr_pairs(root: Path = OLMOCR_SAMPLE) -> Iterator[dict[str, Any]]:
    """olmOCR's answers on the bench sample with the real PDF page's text layer."""
    import pymupdf

    answers = root / "olmocr_pipeline"
    if not answers.is_dir():
        return
    for answer in sorted(answers.rglob("*_repeat1.md")):
        stem, _, number = answer.name.removesuffix("_repeat1.md").rpartition("_pg")
        pdf = root / "pdfs" / answer.parent.relative_to(answers) / f"{stem}.pdf"
        if not pdf.is_file():
            continue
        with pymupdf.open(pdf) as doc:
            layer = doc[int(number) - 1].get_text()
        yield {
            "source": OLMOCR,
            "producer": "olmocr",
            "page": answer.stem,
            "text": answer.read_text(encoding="utf-8"),
            "layer": layer,
        }


class LayerDocument:
    """A whole document's text layer, and the stretch of it a page-sized chunk came from: the
    window of the chunk's size (times `SCALE`) where the chunk's word 4-grams are densest in
    the layer (the chunks of the healthy corpus are page-sized, not pages)."""

    SCALE = 1.5

    def __init__(self, text: str) -> None:
        self.tokens = grounding_tokens(text)
        self.places: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i in range(len(self.tokens) - 3):
            self.places[tuple(self.tokens[i : i + 4])].append(i)

    def page_of(self, chunk: str) -> str:
        words = grounding_tokens(chunk)
        found = sorted(
            place
            for i in range(len(words) - 3)
            for place in self.places.get(tuple(words[i : i + 4]), ())[:3]
        )
        if not found:
            return ""
        half = int(len(words) * self.SCALE / 2)
        # the densest stretch of matches: where the chunk's own words are
        best, first = (0, found[0]), 0
        for last, place in enumerate(found):
            while place - found[first] > 2 * half:
                first += 1
            best = max(best, (last - first + 1, (found[first] + place) // 2))
        centre = best[1]
        return " ".join(self.tokens[max(0, centre - half) : centre + half])


def mirror_file(repo: str, commit: str, path: str) -> bytes | None:
    """A file of a mirrored repository at a commit (None: no mirror, or not there)."""
    try:
        gitdir = git_dir(DEFAULT_MIRRORS, repo)
        return subprocess.run(
            ["git", f"--git-dir={gitdir}", "show", f"{commit}:{path}"],
            check=True,
            capture_output=True,
        ).stdout
    except (MirrorMissing, subprocess.CalledProcessError):
        return None


def pypdf_pairs() -> Iterator[dict[str, Any]]:
    """py-pdf/benchmarks' extractions of 14 real PDFs, each page-sized chunk paired with the
    same stretch of the PDF's text layer as PyMuPDF extracted it (pypdf's for PyMuPDF's own)."""
    pages = [p for p in load_pages() if p["source"] == PYPDF]
    documents: dict[tuple[str, str], LayerDocument | None] = {}
    for page in pages:
        commit, path = page["origin"].split("@")[1].split(":", 1)
        name = path.rsplit("/", 1)[1]
        engine = "pypdf" if page["producer"] == "pymupdf" else "pymupdf"
        if (engine, name) not in documents:
            text = mirror_file(PYPDF, commit, f"read/results/{engine}/{name}")
            documents[(engine, name)] = LayerDocument(text.decode()) if text else None
        layer = documents[(engine, name)]
        if layer is None:
            continue
        yield {
            "source": "py-pdf/benchmarks",
            "producer": page["producer"],
            "page": f"{name}#{page['chunk']}",
            "text": page["text"],
            "layer": layer.page_of(page["text"]),
        }


def harvest_pairs(reader: ScanReader | None = None) -> Iterator[dict[str, Any]]:
    """The harvested split (read after the freeze, `bench.healthy_corpus.harvest`) where its
    pages' documents lie in the mirror: a PDF's page with its text layer (PyMuPDF; for a PDF
    read as a whole, the stretch of it the chunk came from), an image with what Folio's verdict
    reader reads on it (`grounding_scans`), read only where a verdict asks, in the languages
    its source's job names."""
    reader = reader or ScanReader()
    from bench.healthy_corpus.harvest import load_harvest

    layers: dict[tuple[str, str], Any] = {}
    for page in load_harvest(everything=True):
        found = page.get("input")
        if not found or found["kind"] not in ("pdf", "image"):
            yield _unpaired(page, f"harvest: {page['source']}")
            continue
        repo, rest = page["origin"].split("@", 1)
        commit = rest.split(":", 1)[0]
        key = (repo, found["path"])
        if key not in layers:
            raw = mirror_file(repo, commit, found["path"])
            layers[key] = None if raw is None else _document(raw, found["kind"])
        document = layers[key]
        if document is None:
            yield _unpaired(page, f"harvest: {repo}")
            continue
        layer: Any
        if found["kind"] == "pdf":
            number = found.get("page")
            layer = (
                document[number - 1]
                if number
                else LayerDocument("\n".join(document)).page_of(page["text"])
            )
        else:
            lang = SOURCE_LANGS.get(repo, "eng")
            layer = functools.partial(reader.read, document, lang)
        yield {
            "source": f"harvest: {repo}",
            "producer": page["producer"],
            "page": f"{found['path']}#{page['chunk']}",
            "text": page["text"],
            "layer": layer,
            "read": "text layer" if found["kind"] == "pdf" else SCAN_READ,
        }


def _unpaired(page: dict[str, Any], source: str) -> dict[str, Any]:
    """A page whose document is not at hand: judged as today, without grounding."""
    return {
        "source": source,
        "producer": page["producer"],
        "page": f"{page['origin']}#{page['chunk']}",
        "text": page["text"],
        "layer": "",
        "read": "none",
    }


def other_corpus_pages() -> Iterator[dict[str, Any]]:
    """The healthy corpus' sources no page text is paired with here (converted from HTML,
    DOCX, LaTeX and the like, or PDFs the mirrors do not hold): judged as today."""
    for page in load_pages():
        if page["source"] not in (ODL, PYPDF, OLMOCR):
            yield _unpaired(page, page["source"])


def _document(raw: bytes, kind: str) -> list[str] | bytes | None:
    """A PDF's pages' text layers, or an image's bytes (None: not readable)."""
    import pymupdf

    if kind == "image":
        return raw
    try:
        with pymupdf.open(stream=raw, filetype="pdf") as doc:
            return [page.get_text() for page in doc]
    except RuntimeError:
        return None
