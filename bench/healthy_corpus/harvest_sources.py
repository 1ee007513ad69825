"""The harvested split (issue 50, part 3): real healthy pages collected after the loop detector
was frozen, from public repositories that no part of the project had read before.

Every source is a repository pinned to a commit, as in `sources`; none of them is one of
`sources.SOURCES`, of the detector's dev set (`bench/detector/devset_sources.py`: the shared
corpus) or of its held-out threads (`bench/detector/heldout.py`: the repositories named by
`degeneration_dev*.jsonl`). A `HarvestSelector` adds to `Selector`:

- `reader`: how a file becomes page text (`harvest_readers`): the file as it is, or the
  transcription inside a PAGE-XML or ALTO file, or the text column of a receipt's box file;
- `pair`: where the document the page was read from lies in the same commit (a regular
  expression over the output's path and the replacement that names the input, without its
  extension; `pair_extensions` are tried in order). Grounding (checking a loop verdict against
  the page's own text layer) is measured on the pages whose input is a PDF.

The detector's code was frozen at `FREEZE_COMMIT` (its `app/degeneration` is unchanged since
e55d2907): the harvest's figure is measured with that code, before anything changes.
"""

from dataclasses import dataclass

from bench.healthy_corpus.sources import Selector, Source

FREEZE_COMMIT = "59e018333bd3fdc9d39a2e155114368f218e6114"
FROZEN_PATH = "app/degeneration"


@dataclass(frozen=True, slots=True)
class HarvestSelector(Selector):
    # harvest_readers.READERS (text | page-xml | alto | box-csv | hocr | text-md) or PAGED_READERS
    # (icdar-tables | textract-lines)
    reader: str = "text"
    # (pattern over the path, input path sans extension; `**/name`: the file of that name
    # anywhere in the commit)
    pair: tuple[str, str] | None = None
    pair_extensions: tuple[str, ...] = (".pdf", ".png", ".jpg", ".jpeg")
    # False where these files' text may not be committed though the source's may (data that
    # a permissive repository carries under terms of its own): rebuilt locally
    committed: bool = True
    # keep every n-th page-sized chunk of a document (in order, from the first): a source of
    # a few very long documents (annual reports) is sampled so that it does not outweigh the
    # others; a stated rule, not a choice of pages
    every: int = 1
    # likewise every n-th file the selector takes (in path order): a bench of many one-page
    # outputs sampled to weigh about as much as another source
    files_every: int = 1


@dataclass(frozen=True, slots=True)
class HarvestSource(Source):
    licence_file: str = "LICENSE"  # where the licence text lies at the commit
    note: str = ""  # what the pages are, and why the licence is read as it is


_HTR_UNITED = (r"^(.*)\.xml$", r"\1")  # the page image beside its transcription
_IMAGES = (".jpg", ".jpeg", ".png", ".tif")

HARVEST: tuple[HarvestSource, ...] = (
    HarvestSource(
        "getomni-ai/zerox",
        "91bbb20c50de86067670aa13833afa1b8a73c22e",
        "MIT",
        True,
        (
            HarvestSelector(
                "shared/outputs/*.md",
                "groundtruth",
                "markdown",
                pair=(r"^shared/outputs/(\d+)\.md$", r"shared/inputs/\1"),
            ),
        ),
        note="zerox's reference Markdown for its test documents (forms, tax returns, "
        "invoices, reports), beside the PDFs and scans they were read from",
    ),
    HarvestSource(
        "yobix-ai/extractous",
        "818d94cdaf8aac27abc5fc63d9773d3127271a1b",
        "Apache-2.0",
        True,
        (
            HarvestSelector(
                "test_files/expected_result/*-ocr.*.txt",
                "tika-tesseract",
                "text",
                exclude=("*.metadata.txt",),
                pair=(r"^test_files/expected_result/(.*)\.txt$", r"test_files/documents/\1"),
                pair_extensions=("",),
            ),
            HarvestSelector(
                "test_files/expected_result/*.txt",
                "tika",
                "text",
                # a CSV read back is not a page; the rest are office files and an EPUB
                exclude=("*.metadata.txt", "*.csv.txt"),
                pair=(r"^test_files/expected_result/(.*)\.txt$", r"test_files/documents/\1"),
                pair_extensions=("",),
            ),
        ),
        note="Apache Tika's text (Tesseract for the scans: Arabic, German, English) of "
        "extractous' test documents: a 10-Q filing, an EPUB, office files",
    ),
    HarvestSource(
        "tabulapdf/tabula-java",
        "2cdf3b4fd3f7e921dca8cc6814cdd9316be40f0f",
        "MIT",
        True,
        (
            HarvestSelector(
                "src/test/resources/technology/tabula/csv/*.csv",
                "tabula",
                "csv",
                # named for the unit test that wrote them, not for a document
                exclude=("*/csv/Test*",),
                pair=(
                    r"^src/test/resources/technology/tabula/csv/(.*)\.csv$",
                    r"src/test/resources/technology/tabula/\1",
                ),
            ),
            HarvestSelector(
                "src/test/resources/technology/tabula/icdar2013-dataset/*/*-str.xml",
                "groundtruth",
                "markdown",
                reader="icdar-tables",
                pair=(r"^(.*)-str\.xml$", r"\1"),
                committed=False,
            ),
        ),
        note="tables tabula extracted from real PDFs (voting records, disclosures, "
        "school lists), as its tests expect them; and the ICDAR 2013 table competition's "
        "ground truth for the EU and US government PDFs tabula carries (its data states no "
        "licence of its own: rebuilt locally)",
    ),
    HarvestSource(
        "apache/pdfbox",
        "89a917394c762257017c27e0cf5189605776aa57",
        "Apache-2.0",
        True,
        (
            HarvestSelector(
                "pdfbox/src/test/resources/input/*.pdf.txt",
                "pdfbox",
                "text",
                pair=(r"^(.*)\.txt$", r"\1"),
                pair_extensions=("",),
            ),
        ),
        licence_file="LICENSE.txt",
        note="PDFBox's text of the PDFs its extraction tests read (a book, paper pages, "
        "a poem collection, forms), beside them",
    ),
    HarvestSource(
        "aws-samples/amazon-textract-textractor",
        "f34c34a6c75dd4675642e52c1bad5a6c0eaf8ee4",
        "Apache-2.0",
        True,
        (
            HarvestSelector(
                "tests/fixtures/saved_api_responses/test_detect_no_duplicate_words_*.json",
                "textract",
                "text",
                reader="textract-lines",
                max_bytes=1_000_000,
                pair=(
                    r"^tests/fixtures/saved_api_responses/test_detect_no_duplicate_words_(.*)"
                    r"\.json$",
                    r"tests/fixtures/\1",
                ),
                pair_extensions=("",),
            ),
        ),
        note="Amazon Textract's lines (its saved responses' LINE blocks) for the scans and "
        "PDFs textractor's tests read: a 10-Q page, forms, paystubs, receipts, an invoice",
    ),
    HarvestSource(
        "thecguyyyy/financial-OCR-benchmark",
        "d3bf7c25c722974e5beed4cb3bbb44fbfe92eb1c",
        "NOASSERTION",
        False,
        tuple(
            HarvestSelector(
                pattern,
                producer,
                "markdown",
                max_bytes=2_000_000,
                pair=(r"^.*/(\d+)\.md$", r"data/pdf/\1"),
                every=4,
            )
            for pattern, producer in (
                ("normalized_predictions/paddleocr-vl-1.6-pagewise/*.md", "paddleocr-vl"),
                ("normalized_predictions/mineru-3.4.4-vlm/*.md", "mineru-vlm"),
                ("normalized_predictions/mineru-3.4.0-pipeline/*.md", "mineru"),
                ("data/gt/primary/*.md", "groundtruth"),
            )
        ),
        note="six Chinese listed companies' annual and interim reports (dense financial "
        "tables) as PaddleOCR-VL 1.6, MinerU 3.4's VLM and pipeline backends and people "
        "read them, beside the PDFs; no licence stated: rebuilt locally",
    ),
    HarvestSource(
        "scribeocr/ocr-benchmark",
        "818efa700e6811bb056efd353b3e1f6fd383de2c",
        "NOASSERTION",
        False,
        (
            HarvestSelector(
                "ground_truth/*.hocr",
                "groundtruth",
                "text",
                reader="hocr",
                max_bytes=3_000_000,
                pair=(r"^ground_truth/(.*?)(?:\.truth)?\.hocr$", r"img/\1"),
            ),
            *(
                HarvestSelector(
                    f"results/{engine}/*.hocr",
                    producer,
                    "text",
                    reader="hocr",
                    max_bytes=3_000_000,
                    pair=(r"^results/[^/]+/(.*)\.hocr$", r"img/\1"),
                )
                for engine, producer in (("tesseractjs_lstm", "tesseract"), ("scribejs", "scribe"))
            ),
        ),
        note="scans of charts, depositions, court filings, forms, multi-column pages, "
        "receipts and slides, with their ground truth and Tesseract's and Scribe's hOCR; no "
        "licence stated: rebuilt locally",
    ),
    HarvestSource(
        "Shyn1803/ocr-benchmark",
        "67aae6580912cb7d7283cfdafd8a1f735570fdd4",
        "NOASSERTION",
        False,
        tuple(
            HarvestSelector(
                f"prediction/{engine}/*.json",
                engine,
                "markdown",
                reader="text-md",
                max_bytes=2_000_000,
                pair=(r"^prediction/[^/]+/(.*)\.json$", r"**/\1"),
                files_every=4,
            )
            # left out: `sabotage` (answers corrupted on purpose), `noop` (none), and the
            # bench's own engine
            for engine in ("pdf_inspector", "opendataloader")
        ),
        note="pdf-inspector's and OpenDataLoader's Markdown of olmOCR-bench's one-page PDFs "
        "(arXiv math, tables, multi-column pages, headers and footers, old scans) and "
        "DocLayNet pages, beside those PDFs, every fourth file; no licence stated: rebuilt "
        "locally",
    ),
    HarvestSource(
        "UB-Mannheim/reichsanzeiger-gt",
        "0a3a0daf03679dc1d206e17dfdabf62b762b0476",
        "CC0-1.0",
        True,
        (
            HarvestSelector(
                "data/reichsanzeiger-1820-1939/GT-PAGE/*.xml",
                "groundtruth",
                "text",
                reader="page-xml",
                max_bytes=3_000_000,
            ),
        ),
        note="ground truth of whole pages of the German Imperial Gazette, 1820-1939 "
        "(Fraktur; notices, stock and price tables); scans by URL only",
    ),
    HarvestSource(
        "HTR-United/tapuscorpus",
        "f18a6afe067bdb213d58ba2b69c3a04013149685",
        "CC-BY-4.0",
        True,
        (
            HarvestSelector(
                "data/*/*.xml",
                "groundtruth",
                "text",
                reader="alto",
                pair=_HTR_UNITED,
                pair_extensions=_IMAGES,
            ),
        ),
        note="typescripts (catalogues, journals, letters; French and other languages), "
        "transcribed page by page beside their scans",
    ),
    HarvestSource(
        "HTR-United/lectaurep-repertoires",
        "3d1c86cf5389265a1ce8b620301d36b4709eb435",
        "CC-BY-4.0",
        True,
        (
            HarvestSelector(
                "data/*/*.xml",
                "groundtruth",
                "text",
                reader="alto",
                pair=_HTR_UNITED,
                pair_extensions=_IMAGES,
            ),
        ),
        note="Paris notaries' handwritten repertories (tables of deeds: dates, names, kinds "
        "of act), transcribed page by page beside their scans",
    ),
    HarvestSource(
        "HTR-United/cremma-medieval",
        "bc4a105f6e8316a9b30d9ce5d98dda2ba947d7d4",
        "CC-BY-4.0",
        True,
        (
            HarvestSelector(
                "data/*/*.xml",
                "groundtruth",
                "text",
                reader="alto",
                # the same pages with their characters normalised by a tool: not a new page
                exclude=("*.chocomufin.xml",),
                pair=_HTR_UNITED,
                pair_extensions=_IMAGES,
            ),
        ),
        licence_file="htr-united.yml",
        note="Old French and Latin manuscripts, transcribed page by page beside their scans "
        "(licence stated in htr-united.yml: CC-BY 4.0)",
    ),
    HarvestSource(
        "zzzDavid/ICDAR-2019-SROIE",
        "27be4271b251c256f695acbade9a801bffe85994",
        "MIT",
        False,
        (
            HarvestSelector(
                "data/box/*.csv",
                "groundtruth",
                "text",
                reader="box-csv",
                pair=(r"^data/box/(.*)\.csv$", r"data/img/\1"),
                pair_extensions=_IMAGES,
            ),
        ),
        note="the ICDAR 2019 SROIE receipts' line transcriptions beside the receipt scans; "
        "the repository is MIT, the competition's data states no licence of its own, so "
        "its text is rebuilt locally rather than committed",
    ),
)
