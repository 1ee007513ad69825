"""Hostile pages generated in the test, never committed: text layers that cost more than their
file's size (issue 62, defect 4) and text no reader sees (defect 8).

Each is one page drawn by a content stream written here, so what it holds is exact: a line
drawn `copies` times at (nearly) one place, in a chosen render mode (3: invisible, as OCR
layers are written), under an image, off the page or in tiny print.
"""

from __future__ import annotations

import pymupdf

VISIBLE = "Folio reads the page and writes down what it sees."


Rect = tuple[float, float, float, float]
PAGE: Rect = (0, 0, 612, 792)


def _page_with_stream(
    stream: bytes, visible: str | None, image: Rect | None = None, image_first: bool = False
) -> bytes:
    """A letter page: `visible` set in 11 pt Helvetica at the top, then `stream` drawn with
    Helvetica as /helv; with an opaque scan-like `image` (top-left origin) painted after it
    (text under the image) or, `image_first`, before everything (a scan under its OCR)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 100), visible or " ", fontsize=11, fontname="helv")
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, stream, compress=True)
    contents = [*page.get_contents(), xref]
    doc.xref_set_key(page.xref, "Contents", "[" + " ".join(f"{c} 0 R" for c in contents) + "]")
    if image:
        pixmap = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 64, 64), False)
        pixmap.clear_with(250)
        page.insert_image(pymupdf.Rect(image), pixmap=pixmap, overlay=not image_first)
    data = bytes(doc.tobytes(garbage=3, deflate=True))
    doc.close()
    return data


def repeated_line_pdf(
    copies: int,
    line: str = VISIBLE,
    mode: int = 3,
    size: float = 11,
    at: tuple[float, float] = (72, 700),
    visible: str | None = VISIBLE,
    image: Rect | None = None,
    image_first: bool = False,
) -> bytes:
    """`line` drawn `copies` times one over another (each 0-2 pt lower than the last, as the
    review's bomb did) in render `mode`, at `size` points from `at` (PDF space, y upwards)."""
    x, y = at
    one = f"1 0 0 1 {x:g} %d Tm ({line}) Tj\n".encode()
    body = b"".join(one % (y - n % 3) for n in range(copies))
    stream = b"BT /helv %g Tf %d Tr\n%sET\n" % (size, mode, body)
    return _page_with_stream(stream, visible, image, image_first)


def text_bomb_pdf(lines: int = 100_000) -> bytes:
    """The review's bomb, scaled: about 30 KB holding `lines` invisible overlapping lines."""
    return repeated_line_pdf(lines, mode=3)


def nested_forms_pdf(per_form: int, fan_out: int) -> bytes:
    """A page that draws one small form `fan_out` times, the form drawing another `fan_out`
    times, which shows one line `per_form` times: a few hundred bytes, per_form * fan_out**2
    lines."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 100), VISIBLE, fontsize=11, fontname="helv")
    font = page.get_fonts()[0][0]
    inner, outer = doc.get_new_xref(), 0
    shows = b"BT /helv 11 Tf 3 Tr " + b"72 700 Td (x) Tj " * per_form + b"ET"
    resources = f"<< /Font << /helv {font} 0 R >> >>"
    doc.update_object(
        inner, f"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources {resources} >>"
    )
    doc.update_stream(inner, shows)
    outer = doc.get_new_xref()
    doc.update_object(
        outer,
        f"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] "
        f"/Resources << /XObject << /In {inner} 0 R >> >> >>",
    )
    doc.update_stream(outer, b"/In Do " * fan_out)
    top = doc.get_new_xref()
    doc.update_object(top, "<<>>")
    doc.update_stream(top, b"/Out Do " * fan_out)
    _, resources = doc.xref_get_key(page.xref, "Resources")  # "n 0 R": the page's own
    doc.xref_set_key(int(resources.split()[0]), "XObject", f"<< /Out {outer} 0 R >>")
    contents = [*page.get_contents(), top]
    doc.xref_set_key(page.xref, "Contents", "[" + " ".join(f"{c} 0 R" for c in contents) + "]")
    data = bytes(doc.tobytes(garbage=3, deflate=True))
    doc.close()
    return data
