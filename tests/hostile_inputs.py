"""Hostile inputs generated in the test, never committed (hostile servers, for the calls Folio
makes, are in tests/hostile_servers.py): PDFs whose structure is broken in the
ways an adversarial review used (a page tree with a cycle, a bad /Count, a page tree that is
not a dictionary), names a file system or an object store handles badly, plain junk, zips of
zeros behind PDF headers, and zips with names `zipfile` itself will not write (the empty one)."""

from __future__ import annotations

import io

from app.pdf.samples import born_digital_pdf, page_text
from tests.hostile_pages import repeated_line_pdf, text_bomb_pdf


def good_pdf(pages: int, seed: int = 0) -> bytes:
    return born_digital_pdf([page_text(seed + n) for n in range(pages)])


def raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF of these objects (1 0 obj is the catalog) with a correct cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def cyclic_page_tree_pdf() -> bytes:
    """A few hundred bytes: the page tree lists itself among its kids. MuPDF counts 2 pages,
    then raises `cycle in page tree` when the pages are walked."""
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        ]
    )


def lying_count_pdf() -> bytes:
    """A page tree that claims 50,000 pages and holds one."""
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 50000 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        ]
    )


def pages_not_a_tree_pdf() -> bytes:
    """The catalog's /Pages is a number."""
    return raw_pdf([b"<< /Type /Catalog /Pages 7 >>"])


def junk_files() -> dict[str, bytes]:
    """Files that are not PDFs Folio can process, each for its own reason."""
    good = good_pdf(1, seed=40)
    return {
        "empty.pdf": b"",
        "text.pdf": b"just some text, not a PDF at all\n",
        "header-only.pdf": b"%PDF-1.7\n",
        "truncated.pdf": good[: len(good) // 2],
        "garbage.pdf": bytes(range(256)) * 8,
        "cycle.pdf": cyclic_page_tree_pdf(),
        "pages-not-a-tree.pdf": pages_not_a_tree_pdf(),
        "html.pdf": b"<html><body>%PDF-1.4 is not here</body></html>",
    }


def image_bomb_pdf(side: int = 1000) -> bytes:
    """One page with a `side` x `side` image: tiny on disk, `side**2` pixels when decoded."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    pixmap = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, side, side), False)
    pixmap.clear_with(255)
    page.insert_image(page.rect, pixmap=pixmap)
    data = bytes(doc.tobytes(deflate=True))
    doc.close()
    return data


def corpus() -> tuple[dict[str, bytes], dict[str, bytes]]:
    """At least 30 files: (good PDFs, bad files) by name, names chosen to break things (the
    job's own `summary`/`report`, cases, separators, quotes, control characters, lengths)."""
    names = [
        "plain.pdf",
        "UPPER.PDF",
        "summary.pdf",
        "report.pdf",
        "Summary.PDF",
        "ünïcödé-名前.pdf",
        "line\nbreak.pdf",
        "tab\tand;semi'quote\".pdf",
        "a" * 240 + ".pdf",
        "b" * 200 + "é" * 20 + ".pdf",
        "-rf.pdf",
        "$(id).pdf",
        "%2e%2e%2f..%2fetc.pdf",
        "trailing-comment.pdf",
        " leading space.pdf",
        "trailing space .pdf",
        "CON.pdf",
        "emoji-📄.pdf",
    ]
    good = {name: good_pdf(1 + n % 2, seed=n) for n, name in enumerate(names)}
    good["trailing-comment.pdf"] += b"\n% a comment after %%EOF is still a PDF\n"
    bad = dict(junk_files())
    bad["bomb.pdf"] = image_bomb_pdf()
    bad["count.pdf"] = lying_count_pdf()
    bad["x" * 240 + ".pdf"] = b""
    bad["pdf-in-name-only.pdf.txt.pdf"] = b"%PDF- but nothing after"
    bad["zeros.pdf"] = b"%PDF-1.4\n" + b"\0" * 4096
    # Pages that fail alone (issue 62): a text layer of 100,000 invisible overlapping lines,
    # and a layer that is 5,000 hidden copies of its one visible line (read as a scan: no
    # text layer to fall back on).
    bad["text-bomb.pdf"] = text_bomb_pdf()
    bad["hidden-copies.pdf"] = repeated_line_pdf(5_000, "Total due: 12.50 EUR")
    assert len(good) + len(bad) >= 30
    return good, bad


def zeros_zip(members: int, size: int) -> bytes:
    """A zip of `members` files, each a PDF header and then `size` zero bytes: a few KB that
    unpack to `members * size` bytes of documents that all fail (issue 62: 202 KB, 198 MiB)."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zipped:
        for n in range(members):
            zipped.writestr(f"zeros-{n}.pdf", b"%PDF-1.4\n" + b"\0" * size)
    return out.getvalue()


def raw_zip(entries: list[tuple[bytes, bytes]]) -> bytes:
    """A zip of stored members written byte by byte, so that a name `zipfile` will not write
    (the empty name) can be in it."""
    import struct
    import zlib

    out, central = io.BytesIO(), b""
    for name, data in entries:
        offset = out.tell()
        sizes = (zlib.crc32(data), len(data), len(data), len(name))
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, *sizes, 0) + name + data)
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, *sizes, 0, 0, 0, 0, 0, offset
        )
        central += name
    start = out.tell()
    out.write(central)
    out.write(
        struct.pack(
            "<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), start, 0
        )
    )
    return out.getvalue()
