"""Generates demo and test PDFs: born-digital, scanned, multi-page, and the broken kinds."""

from __future__ import annotations

import io
import random
import textwrap
from pathlib import Path

from PIL import Image, ImageFilter

PARAGRAPHS = [
    "Folio turns folders of PDF files into text. Each page is rendered to an image, read by an "
    "OCR engine, and stored with every attempt that was made to read it.",
    "Vision language models read tables and handwriting better than older engines, but they "
    "sometimes fall into a loop and repeat the same line until the token limit cuts them off.",
    "A looping request holds memory on the accelerator for its whole length, so the other "
    "requests in the batch slow down while it runs. Catching the loop early saves that time.",
    "The quarterly report lists revenue of 4,210 dollars in March, 3,980 dollars in April and "
    "5,115 dollars in May, for a total of 13,305 dollars over the three months.",
    "Please return the signed form to the office before the first of June. Late forms are "
    "processed in the order in which they arrive at the front desk.",
    "The river rises in the northern hills and runs south through farmland for two hundred "
    "miles before it reaches the sea at a wide and shallow bay.",
]


def page_text(seed: int, paragraphs: int = 3) -> str:
    """Deterministic page content: a heading and a few paragraphs."""
    rng = random.Random(seed)
    chosen = rng.sample(PARAGRAPHS, k=min(paragraphs, len(PARAGRAPHS)))
    return f"Section {seed}\n\n" + "\n\n".join(chosen)


def born_digital_pdf(pages: list[str]) -> bytes:
    """A PDF whose pages carry `pages` as a real text layer."""
    import pymupdf  # here, not at the top: page_text serves a GPU machine without it

    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page(width=612, height=792)
        wrapped = "\n".join(
            "\n".join(textwrap.wrap(block, 80)) if block else "" for block in text.split("\n")
        )
        page.insert_text((60, 72), wrapped, fontsize=11, fontname="helv")
    data = doc.tobytes(garbage=3, deflate=True)
    doc.close()
    return bytes(data)


def scanned_pdf(pages: list[str], dpi: int = 200, seed: int = 0) -> bytes:
    """Image-only pages: the born-digital pages rasterised, slightly blurred and noisy."""
    import pymupdf

    source = pymupdf.open(stream=born_digital_pdf(pages), filetype="pdf")
    out = pymupdf.open()
    rng = random.Random(seed)
    for page in source.pages():
        pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
        image = Image.frombytes("L", (pixmap.width, pixmap.height), pixmap.samples)
        image = image.rotate(
            rng.uniform(-0.6, 0.6), fillcolor=255, resample=Image.Resampling.BICUBIC
        )
        image = image.filter(ImageFilter.GaussianBlur(0.6))
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=70)
        target = out.new_page(width=page.rect.width, height=page.rect.height)
        target.insert_image(target.rect, stream=buffer.getvalue())
    data = out.tobytes(garbage=3, deflate=True)
    return bytes(data)


def encrypted_pdf(text: str, password: str = "secret") -> bytes:
    import pymupdf

    doc = pymupdf.open(stream=born_digital_pdf([text]), filetype="pdf")
    aes256 = pymupdf.PDF_ENCRYPT_AES_256  # type: ignore[attr-defined]
    data = doc.tobytes(encryption=aes256, user_pw=password, owner_pw=password)
    return bytes(data)


def zero_page_pdf() -> bytes:
    """A syntactically valid PDF with an empty page tree (PyMuPDF refuses to write one)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [] /Count 0 >>",
    ]
    body, offsets = b"%PDF-1.7\n", []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(body))
        body += b"%d 0 obj\n%s\nendobj\n" % (number, obj)
    xref = len(body)
    body += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    body += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    body += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return body


def corrupt_pdf() -> bytes:
    """A PDF header followed by garbage: no object, no page, no trailer."""
    return b"%PDF-1.7\n" + bytes(random.Random(7).getrandbits(8) for _ in range(4096))


def mixed_pdf(digital: str, scanned: str) -> bytes:
    """Page 1 with a text layer, page 2 image-only: one document, both routes."""
    import pymupdf

    doc = pymupdf.open(stream=born_digital_pdf([digital]), filetype="pdf")
    doc.insert_pdf(pymupdf.open(stream=scanned_pdf([scanned]), filetype="pdf"))
    return bytes(doc.tobytes(garbage=3, deflate=True))


def write_samples(folder: Path, broken: bool = False) -> list[Path]:
    """The demo folder: a document of each good kind, and with `broken` one of each bad kind."""
    files = {
        "report.pdf": born_digital_pdf([page_text(n) for n in (1, 2, 3)]),
        "scanned-letter.pdf": scanned_pdf([page_text(4, paragraphs=2)]),
        "mixed/notes.pdf": mixed_pdf(page_text(5), page_text(6, paragraphs=2)),
    }
    if broken:
        files |= {
            "broken/encrypted.pdf": encrypted_pdf(page_text(7)),
            "broken/truncated.pdf": corrupt_pdf(),
            "broken/empty.pdf": zero_page_pdf(),
            "broken/not-a-pdf.pdf": b"This is a plain text file with a .pdf name.\n",
        }
    written = []
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written
