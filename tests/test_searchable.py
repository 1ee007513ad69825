"""Searchable PDFs as a reader sees them: the text a PDF reader copies out of each page is the
kept text (word F1 >= 0.99), in any script; every page renders exactly as the original; a
PDF the writer must not touch is refused with a reason. Real PDFs, real Tesseract, PyMuPDF
(and pdftotext where installed) reading the result."""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
import unicodedata
from collections.abc import Iterator, Sequence
from difflib import SequenceMatcher
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from app.engines.tesseract import TesseractEngine
from app.pdf.samples import born_digital_pdf, mixed_pdf, page_text, scanned_pdf
from app.searchable.align import FoundWord
from app.searchable.document import PdfNotWritten
from app.searchable.reading import TesseractWords
from app.searchable.words import layer_text
from app.searchable.writer import PageText, SearchablePdfWriter
from app.textmatch import word_f1
from tests.searchable_pdfs import damaged_pdf, owner_encrypted_pdf, signed_pdf


def as_is(path: str, sha256: str | None, etag: str | None) -> Path:
    return Path(path)


@pytest.fixture(scope="module")
def tesseract() -> Iterator[TesseractWords]:
    words = TesseractWords(lambda: TesseractEngine(second_reader=None), 200)
    yield words
    words.close()


class GivenWords:
    """Words at boxes the test knows (a PageWords, as Tesseract's reader is one)."""

    def __init__(self, words: Sequence[FoundWord]) -> None:
        self.words = list(words)

    def read(self, path: Path, number: int, size_pt: tuple[float, float]) -> list[FoundWord]:
        return self.words


def write(tmp_path: Path, data: bytes, pages: list[PageText], words: object) -> pymupdf.Document:
    original = tmp_path / "original.pdf"
    original.write_bytes(data)
    out = SearchablePdfWriter(as_is, words).write(str(original), None, None, pages)  # type: ignore[arg-type]
    (tmp_path / "searchable.pdf").write_bytes(out)
    return pymupdf.open(stream=out, filetype="pdf")


def same_pixels(a: pymupdf.Document, b: pymupdf.Document) -> bool:
    """Every page the same pixels in MuPDF, and in poppler's pdftoppm where it is installed."""
    mupdf = a.page_count == b.page_count and all(
        a[n].get_pixmap(dpi=72).samples == b[n].get_pixmap(dpi=72).samples
        for n in range(a.page_count)
    )
    return mupdf and (shutil.which("pdftoppm") is None or poppler_pixels(a) == poppler_pixels(b))


def poppler_pixels(doc: pymupdf.Document) -> list[bytes]:
    """Each page as pdftoppm renders it, from the file's own bytes."""
    pages = []
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "doc.pdf"
        source.write_bytes(doc.stream or doc.tobytes())
        for number in range(1, doc.page_count + 1):
            command = ["pdftoppm", "-r", "50", "-gray", "-f", str(number), "-l", str(number)]
            target = Path(tmp) / f"page{number}"
            subprocess.run([*command, "-singlefile", str(source), str(target)], check=True)
            pages.append(target.with_suffix(".pgm").read_bytes())
    return pages


def truth_boxes(text: str) -> list[FoundWord]:
    """The words of the born-digital page `text` makes, where its own layer puts them."""
    page = pymupdf.open(stream=born_digital_pdf([text]), filetype="pdf")[0]
    return [FoundWord(w[4], tuple(w[:4]), w[6] + 100 * w[5]) for w in page.get_text("words")]


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(width, 0) * max(height, 0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def box_matches(page: pymupdf.Page, truth: list[FoundWord]) -> list[float]:
    """Each placed word's IoU with the same word of the truth (words paired in order)."""
    placed = page.get_text("words")
    matcher = SequenceMatcher(None, [w[4] for w in placed], [w.text for w in truth], False)
    return [
        iou(placed[i + k][:4], truth[j + k].box)
        for i, j, size in matcher.get_matching_blocks()
        for k in range(size)
    ]


def test_a_models_words_land_on_tesseracts_and_copy_out_as_kept(
    tmp_path: Path, tesseract: TesseractWords
) -> None:
    text = page_text(4, paragraphs=2)
    # The model's answer: Markdown, front matter, and two words Tesseract will not read so.
    kept = "---\nprimary_language: en\n---\n# " + text.replace("rises", "**rlses**").replace(
        "Folio", "Folioo"
    )
    scan = scanned_pdf([text])
    doc = write(tmp_path, scan, [PageText(1, "vlm", kept)], tesseract)
    copied = doc[0].get_text()
    assert word_f1(copied, layer_text(kept)) >= 0.99
    assert "**" not in copied and "primary_language" not in copied and "#" not in copied
    assert same_pixels(doc, pymupdf.open(stream=scan, filetype="pdf"))
    shares = box_matches(doc[0], truth_boxes(text))
    assert len(shares) >= 40 and sum(s >= 0.5 for s in shares) / len(shares) >= 0.9


def test_tesseracts_own_words_and_a_born_digital_page_left_alone(tmp_path: Path) -> None:
    digital, scanned = page_text(5), page_text(6, paragraphs=2)
    data = mixed_pdf(digital, scanned)
    boxes = truth_boxes(scanned)
    positions = {
        "source": "tesseract",
        "words": [{"text": w.text, "box_pt": list(w.box), "line": w.line} for w in boxes],
    }
    pages = [
        PageText(1, "textlayer", digital),
        PageText(2, "tesseract", scanned.replace("\n\n", "\n"), positions),
    ]
    doc = write(tmp_path, data, pages, None)
    original = pymupdf.open(stream=data, filetype="pdf")
    assert doc[0].get_text() == original[0].get_text()  # nothing added to its own layer
    assert word_f1(doc[1].get_text(), scanned) >= 0.99
    assert same_pixels(doc, original)
    # The original's bytes are the file's first bytes: the layer is an update after them.
    assert (tmp_path / "searchable.pdf").read_bytes().startswith(data)


BIDI_MARKS = dict.fromkeys(range(0x202A, 0x202F))  # poppler wraps an RTL line in them
SCRIPTS = {
    "arabic": "مَرْحَبًا بالعالم هذا نص عربي",
    "hebrew": "שָׁלוֹם עולם זה טקסט בעברית",
    "chinese": "这是一个中文句子 用于测试",
    "japanese": "日本語のテキストです",
    "marks": "cafe\u0301 nai\u0308ve Ångström ﬁnal",
    "beyond": "𠀀𠀁 emoji 😀 here",
}


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_any_script_copies_out_in_logical_order(tmp_path: Path, script: str) -> None:
    text = SCRIPTS[script]
    words = [
        FoundWord(w, (72.0 + 60 * i, 100.0, 120.0 + 60 * i, 114.0), 0)
        for i, w in enumerate(text.split())
    ]
    if script in ("arabic", "hebrew"):  # right to left: the first word is the rightmost
        words = [FoundWord(w.text, words[-1 - i].box, 0) for i, w in enumerate(words)]
    data = scanned_pdf(["blank"])
    doc = write(tmp_path, data, [PageText(1, "vlm", text)], GivenWords(words))
    copied = unicodedata.normalize("NFC", doc[0].get_text())
    assert copied.split() == unicodedata.normalize("NFC", text).split()
    assert same_pixels(doc, pymupdf.open(stream=data, filetype="pdf"))
    if shutil.which("pdftotext"):  # poppler too, in logical order
        out = subprocess.run(
            ["pdftotext", "-enc", "UTF-8", str(tmp_path / "searchable.pdf"), "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        logical = unicodedata.normalize("NFC", out.translate(BIDI_MARKS))
        assert logical.split() == unicodedata.normalize("NFC", text).split()


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_turned_page_gets_its_words_where_they_show(
    tmp_path: Path, tesseract: TesseractWords, turn: int
) -> None:
    text = page_text(2, paragraphs=1)
    upright = pymupdf.open(stream=born_digital_pdf([text]), filetype="pdf")[0]
    image = Image.open(io.BytesIO(upright.get_pixmap(dpi=150).tobytes("png")))
    stored = io.BytesIO()
    image.rotate(turn, expand=True).save(stored, "png")  # stored turned, shown upright (/Rotate)
    scan = pymupdf.open()
    page = scan.new_page(
        width=image.rotate(turn, expand=True).width * 72 / 150,
        height=image.rotate(turn, expand=True).height * 72 / 150,
    )
    page.insert_image(page.rect, stream=stored.getvalue())
    page.set_rotation(turn)
    data = scan.tobytes()
    result = write(tmp_path, data, [PageText(1, "vlm", text)], tesseract)
    assert word_f1(result[0].get_text(), text) >= 0.99
    shares = box_matches(result[0], truth_boxes(text))
    assert sum(s >= 0.5 for s in shares) / len(shares) >= 0.9
    assert same_pixels(result, pymupdf.open(stream=data, filetype="pdf"))


@pytest.mark.parametrize(
    ("make", "reason"),
    [(owner_encrypted_pdf, "encrypted"), (signed_pdf, "signed"), (damaged_pdf, "damaged")],
)
def test_a_pdf_that_must_not_be_touched_is_refused_with_its_reason(
    tmp_path: Path, make: object, reason: str
) -> None:
    data = make(page_text(1))  # type: ignore[operator]
    with pytest.raises(PdfNotWritten, match=reason):
        write(tmp_path, data, [PageText(1, "tesseract", "Section 1")], GivenWords([]))


def test_words_read_before_the_first_word_found_stay_on_the_page(
    tmp_path: Path, tesseract: TesseractWords
) -> None:
    """The model reads a line Tesseract misses before everything Tesseract finds (a cover's
    faint web address): its words go left of the first found word, and past the page's edge
    they would be lost to a copy (a reader keeps only the text on the page)."""
    text = page_text(2, paragraphs=1)
    unseen = " ".join(f"faint{n}" for n in range(40))
    kept = [PageText(1, "vlm", unseen + "\n\n" + text)]
    doc = write(tmp_path, scanned_pdf([text]), kept, tesseract)
    page = doc[0]
    assert word_f1(page.get_text(), unseen + " " + text) >= 0.99
    inside = page.rect
    for word in page.get_text("words"):
        assert inside.contains(pymupdf.Rect(word[:4])), word


def test_words_read_after_the_last_word_found_get_a_strip_of_their_own(
    tmp_path: Path, tesseract: TesseractWords
) -> None:
    """Words the model reads after everything Tesseract finds would go after the last found
    word up to the page's edge: eighty words squeezed there overlap, and a reader copies them
    out as one; laid in a strip under the line instead, each copies out as itself."""
    text = page_text(2, paragraphs=1)
    unseen = " ".join(f"faint{n}" for n in range(80))
    doc = write(
        tmp_path, scanned_pdf([text]), [PageText(1, "vlm", text + "\n\n" + unseen)], tesseract
    )
    page = doc[0]
    assert word_f1(page.get_text(), text + " " + unseen) >= 0.99
    for word in page.get_text("words"):
        assert page.rect.contains(pymupdf.Rect(word[:4])), word
