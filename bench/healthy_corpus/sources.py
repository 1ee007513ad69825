"""Where the healthy corpus comes from: repositories pinned to commits, their licences, and
which files of each are outputs of OCR models or converters on real documents.

A selector's `pattern` is an `fnmatch` pattern over the path at the pinned commit; `exclude`
drops synthetic or generated-from-nothing files (faker tables, constructed test documents,
embedding dumps). `paged` means one file is one page (a page-level benchmark output), kept
whole; otherwise a file is a document, split into page-sized chunks (`chunking`).
`redistributable` is whether the licence lets the text be committed here (permissive:
MIT, Apache-2.0); copyleft sources (GPL, AGPL) are rebuilt locally from the pinned commit.

Left out on purpose: unstructured's element JSON (`expected-structured-output/*.json`). Each
element carries a ~600-character metadata record (file name, URL, record locator, dates) that
comes back verbatim but for a hex id; no profile answers in that shape, and its 541 chunks
would outweigh every real answer format (297 of them are flagged as `block` loops today).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Selector:
    pattern: str
    producer: str  # the model or converter that wrote the text ("groundtruth" for references)
    fmt: str = ""  # answer format; empty: from the file's extension
    paged: bool = False
    exclude: tuple[str, ...] = ()
    max_bytes: int = 400_000  # larger files are embedded images or data dumps, not pages
    # Set (to the reason) for files whose pages cannot be taken as healthy: only their chunks
    # read as loops (`READ_LOOPS`) are kept, as loops; the rest is dropped.
    loops_only: str = ""


@dataclass(frozen=True, slots=True)
class Source:
    repo: str
    commit: str
    licence: str  # SPDX identifier of the repository's LICENSE at `commit`
    redistributable: bool
    selectors: tuple[Selector, ...] = field(default_factory=tuple)


_ODL_ENGINES = (
    "docling",
    "marker",
    "mineru",
    "markitdown",
    "pymupdf4llm",
    "opendataloader",
    "opendataloader-hybrid",
)
# Connector fixtures that are not documents: faker rows, database and CRM records, sample
# tickets and pages written for the test ("testtext3" ten times a line, "This is an empty
# custom property." per field), and embedding vectors.
_UNSTRUCTURED_SKIP = (
    "*/delta-table/*",
    "*/embed-*",
    "*/astradb/*",
    "*/elasticsearch/*",
    "*/opensearch/*",
    "*/mongodb/*",
    "*/kafka-*",
    "*/airtable-diff/*",
    "*/hubspot/*",
    "*/salesforce/*",
    "*/jira-diff/*",
    "*/discord/*",
    "*/confluence-diff/testteamsp/*",
    "*fake-text*",
)
# Test inputs written for a converter's unit tests rather than taken from real documents.
_DOCLING_SKIP = (
    "tests/data/csv/*",  # hand-made CSV edge cases (`a | b | c | d` rows)
    "tests/data/docx/groundtruth/equations.docx.md",  # "This is text." twenty times
)
_DOCLING_CORE_SKIP = ("*constructed*", "*dummy*", "*/unit/*")

SOURCES: tuple[Source, ...] = (
    Source(
        "opendataloader-project/opendataloader-bench",
        "b4b95051f81ae94c9fa20b8749f1f1371226bd71",
        "MIT",
        True,
        (
            *(
                Selector(f"prediction/{engine}/markdown/*.md", engine, "markdown", paged=True)
                for engine in _ODL_ENGINES
            ),
            Selector("ground-truth/markdown/*.md", "groundtruth", "markdown", paged=True),
        ),
    ),
    Source(
        "docling-project/docling",
        "e1cb2b234c48ff29746b0f2f843d07f8e23905a0",
        "MIT",
        True,
        (
            Selector("tests/data/*/groundtruth/*.md", "docling", exclude=_DOCLING_SKIP),
            Selector(
                "tests/data/*/groundtruth/*.doctags.txt",
                "docling",
                "doctags",
                exclude=_DOCLING_SKIP,
            ),
            Selector("tests/data/md_deepseek/*.md", "deepseek-ocr"),
            Selector("tests/data/html/*.html", "web page", "html", max_bytes=200_000),
        ),
    ),
    Source(
        "docling-project/docling-core",
        "b7a4298b4fe2470a97b2b3383d4e9e373e1727b0",
        "MIT",
        True,
        (
            Selector("test/data/doc/*.md", "docling", exclude=_DOCLING_CORE_SKIP),
            Selector("test/data/doc/*.dt", "docling", "doctags", exclude=_DOCLING_CORE_SKIP),
            Selector("test/data/doc/*.html", "docling", "html", exclude=_DOCLING_CORE_SKIP),
        ),
    ),
    Source(
        "Unstructured-IO/unstructured",
        "3e5482bfcdc843b5218ad98d2845b4b71ab013b7",
        "Apache-2.0",
        True,
        (
            Selector(
                "test_unstructured_ingest/expected-structured-output-markdown/*",
                "unstructured",
                "markdown",
                exclude=_UNSTRUCTURED_SKIP,
            ),
            Selector(
                "test_unstructured_ingest/expected-structured-output-html/*",
                "unstructured",
                "html",
                exclude=_UNSTRUCTURED_SKIP,
            ),
        ),
    ),
    Source(
        "allenai/olmocr",
        "f7cfe4c22098b154c76b6ec950d1c0a464eecf8d",
        "Apache-2.0",
        True,
        (
            Selector("olmocr/bench/sample_data/olmocr_pipeline/*.md", "olmocr", paged=True),
            Selector("tests/sample_dataset/*/*.md", "olmocr", paged=True),
        ),
    ),
    Source(
        "breezedeus/Pix2Text",
        "f881e9df93d1ee6e90e823a66776ae0bb501f810",
        "MIT",
        True,
        (
            Selector("docs/output-md/*.md", "pix2text"),
            Selector("docs/examples*.md", "docs"),
            Selector("docs/index*.md", "docs"),
            Selector("docs/usage.md", "docs"),
            Selector("README*.md", "docs"),
        ),
    ),
    Source(
        "py-pdf/benchmarks",
        "24c51dd4194b93fc55d4615f0b6ed9b6ef67b359",
        "BSD-3-Clause",
        True,
        tuple(
            Selector(f"read/results/{library}/*.txt", library, "text")
            for library in ("pymupdf", "pdftotext", "pypdf", "pdfminer")
        ),
    ),
    Source(
        "datalab-to/marker",
        "2f7f1975c1aa4999093a6ad066191200dcd43647",
        "GPL-3.0-or-later",
        False,
        (Selector("data/examples/markdown/*/*.md", "marker", max_bytes=600_000),),
    ),
    Source(  # the same repository before its examples were replaced: Nougat beside marker
        "datalab-to/marker",
        "0817d873f16b2265eefaf053a947354ba1e816eb",
        "GPL-3.0-or-later",
        False,
        (
            Selector("data/examples/nougat/multicolcnn.md", "nougat"),
            Selector("data/examples/nougat/switch_transformers.md", "nougat"),
            Selector(
                "data/examples/nougat/think*.md",
                "nougat",
                max_bytes=700_000,
                loops_only=(
                    "Nougat on two programming books, out of its domain (arXiv papers): it "
                    "loops on page after page (`is a program that is a program ...`) and "
                    "invents text between, so no page of it is taken as healthy"
                ),
            ),
            Selector("data/examples/marker/thinkos.md", "marker"),
        ),
    ),
    Source(
        "opendatalab/MinerU",
        "79d6d8d79fb8f3ddba5cc34c07a16f0ec36f56c7",
        # Apache-2.0 with added terms at this commit (its LICENSE.md): kept out of the repo.
        "LicenseRef-MinerU-Open-Source-License",
        False,
        (Selector("docs/*.md", "docs"),),
    ),
)

# Pages read and found to hold a real loop (origin with chunk -> what loops): they go to the
# loops file, not the healthy corpus. Candidates came from the detector's verdicts and from
# reading; each was read, and one candidate was rejected (Nougat's `thinkpython.md#40`, the
# book's own execution trace "Since 3 is not 0, ...", which marker's output holds too).
READ_LOOPS: dict[str, str] = json.loads(
    (Path(__file__).with_name("read_loops.json")).read_text(encoding="utf-8")
)
