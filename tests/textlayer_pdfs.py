"""Generated PDFs for the text-layer tests: a shifted font encoding, a table, running heads."""

from __future__ import annotations

import textwrap

import pymupdf

# A ToUnicode map that reads every printable character as the one before it: the page shows the
# right glyphs, the text layer says "Oqnbddchmfr" for "Proceedings" (a real-world broken font).
_SHIFTED_CMAP = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Folio-Shifted-UCS def
/CMapType 2 def
1 begincodespacerange
<00> <FF>
endcodespacerange
1 beginbfrange
<41> <7A> <0040>
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end
"""


def _text_page(doc: pymupdf.Document, text: str) -> pymupdf.Page:
    page = doc.new_page(width=612, height=792)
    wrapped = "\n".join(textwrap.wrap(text, 70))
    page.insert_text((60, 90), wrapped, fontsize=14, fontname="helv")
    return page


def text_pdf(text: str, *, shifted_encoding: bool = False) -> bytes:
    """One page of `text`; with `shifted_encoding` its font's ToUnicode map is off by one."""
    doc = pymupdf.open()
    page = _text_page(doc, text)
    if shifted_encoding:
        cmap = doc.get_new_xref()
        doc.update_object(cmap, "<<>>")
        doc.update_stream(cmap, _SHIFTED_CMAP)
        for font in page.get_fonts():
            doc.xref_set_key(font[0], "ToUnicode", f"{cmap} 0 R")
    return bytes(doc.tobytes(garbage=3, deflate=True))


def table_pdf(rows: list[list[str]], intro: str) -> bytes:
    """A paragraph, then `rows` in a grid of ruled cells (the first row as the header)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 150), intro, fontsize=11, fontname="helv")
    left, top, width, height = 72.0, 170.0, 150.0, 24.0
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            x, y = left + c * width, top + r * height
            page.insert_text((x + 6, y + 16), cell, fontsize=11, fontname="helv")
    right, bottom = left + width * len(rows[0]), top + height * len(rows)
    for r in range(len(rows) + 1):
        page.draw_line((left, top + r * height), (right, top + r * height), width=0.8)
    for c in range(len(rows[0]) + 1):
        page.draw_line((left + c * width, top), (left + c * width, bottom), width=0.8)
    return bytes(doc.tobytes(garbage=3, deflate=True))


def running_head_pdf(header: str, bodies: list[str]) -> bytes:
    """Pages with `header` at the top edge and "Page N" at the bottom, around each body."""
    doc = pymupdf.open()
    for number, body in enumerate(bodies, start=1):
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 40), header, fontsize=9, fontname="helv")
        wrapped = "\n".join(textwrap.wrap(body, 85))
        page.insert_text((72, 110), wrapped, fontsize=11, fontname="helv")
        page.insert_text((290, 760), f"Page {number}", fontsize=9, fontname="helv")
    return bytes(doc.tobytes(garbage=3, deflate=True))


def _cmap(mapping: dict[int, str]) -> bytes:
    """A ToUnicode CMap for one-byte codes: each code in `mapping` reads as its string."""
    entries = [
        f"<{code:02X}> <{''.join(f'{ord(ch):04X}' for ch in text)}>"
        for code, text in sorted(mapping.items())
    ]
    blocks = [
        f"{len(chunk)} beginbfchar\n" + "\n".join(chunk) + "\nendbfchar"
        for chunk in (entries[i : i + 100] for i in range(0, len(entries), 100))
    ]
    return (
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        "/CMapName /Folio-Broken-UCS def\n/CMapType 2 def\n"
        "1 begincodespacerange\n<00> <FF>\nendcodespacerange\n"
        + "\n".join(blocks)
        + "\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
    ).encode("ascii")


def broken_font_pdf(text: str, changes: dict[str, str]) -> bytes:
    """One page of `text` drawn right, whose font's ToUnicode map reads each character in
    `changes` as its replacement ("" drops it, " " leaves a gap, "f " splits after it)."""
    mapping = {code: changes.get(chr(code), chr(code)) for code in range(0x20, 0x7F)}
    doc = pymupdf.open()
    page = _text_page(doc, text)
    cmap = doc.get_new_xref()
    doc.update_object(cmap, "<<>>")
    doc.update_stream(cmap, _cmap(mapping))
    for font in page.get_fonts():
        doc.xref_set_key(font[0], "ToUnicode", f"{cmap} 0 R")
    return bytes(doc.tobytes(garbage=3, deflate=True))


def borderless_pdf(rows: list[list[str]], intro: str, x_columns: list[float]) -> bytes:
    """A paragraph, then `rows` set in columns starting at `x_columns`, with no rulings: each
    row its own text block, as layout programs write them. A row of one cell under a column
    other than the first is a value that wrapped."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 150), intro, fontsize=11, fontname="helv")
    y = 180.0
    for row in rows:
        for x, cell in zip(x_columns, row, strict=False):
            if cell:
                page.insert_text((x, y), cell, fontsize=10, fontname="helv")
        y += 16
    page.insert_textbox(
        pymupdf.Rect(72, y + 20, 540, y + 120), "The figures above are provisional.", fontsize=11
    )
    return bytes(doc.tobytes(garbage=3, deflate=True))
