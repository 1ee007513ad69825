"""Builds `glyphless.ttf`, the one font of every searchable PDF's invisible text layer.

Run once with fontTools (`pip install fonttools`; it is not a Folio dependency):
`python -m app.searchable.build_font`. The font is Folio's own, made here (no third-party
outlines: it has none), so it carries Folio's licence. It follows the design of Tesseract's
`pdf.ttf` (Apache-2.0), which OCRmyPDF also embeds: every glyph is empty and 500 units wide,
and the PDF maps every character code to glyph 1 (`CIDToGIDMap`), so one small font serves
every script. Ascent 800 and descent -200 units make a word's text box, as PDF readers compute
it from the font, the box the writer scales the word to.
"""

from __future__ import annotations

from pathlib import Path

FONT_PATH = Path(__file__).with_name("glyphless.ttf")
UNITS_PER_EM = 1000
ADVANCE = 500
ASCENT, DESCENT = 800, -200


def build() -> bytes:
    from io import BytesIO

    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    names = [".notdef", "glyphless"]
    builder = FontBuilder(UNITS_PER_EM, isTTF=True)
    builder.setupGlyphOrder(names)
    builder.setupCharacterMap({0x20: "glyphless"})
    empty = TTGlyphPen(None).glyph()
    builder.setupGlyf({name: empty for name in names})
    builder.setupHorizontalMetrics({name: (ADVANCE, 0) for name in names})
    builder.setupHorizontalHeader(ascent=ASCENT, descent=DESCENT)
    builder.setupNameTable({"familyName": "FolioGlyphless", "styleName": "Regular"})
    builder.setupOS2(
        sTypoAscender=ASCENT,
        sTypoDescender=DESCENT,
        sTypoLineGap=0,
        usWinAscent=ASCENT,
        usWinDescent=-DESCENT,
    )
    builder.setupPost()
    out = BytesIO()
    builder.save(out)
    return out.getvalue()


if __name__ == "__main__":
    FONT_PATH.write_bytes(build())
    print(f"wrote {FONT_PATH} ({FONT_PATH.stat().st_size} bytes)")
