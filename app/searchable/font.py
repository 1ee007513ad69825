"""The glyphless font as PDF objects, and the character codes the layer's text is written in.

As Tesseract's PDF renderer writes it: a Type0 font, `Identity-H`, whose one CIDFontType2
maps every code to the font's one empty glyph (`CIDToGIDMap`); a code is the character's
UTF-16 unit, and `ToUnicode` maps it back, so any script copies out as it was written. A
character beyond the BMP gets a code of its own from the surrogate range (no BMP character
uses those), mapped to its surrogate pair in `ToUnicode`.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from pathlib import Path

from app.searchable.build_font import ADVANCE, ASCENT, DESCENT

FONT_NAME = "FolioGlyphless"
RESOURCE = "FolioGlyphless"  # its name in a page's /Resources /Font
_SURROGATES = range(0xD800, 0xE000)
_REPLACEMENT = 0xFFFD
_RANGES_PER_BLOCK = 100  # a CMap's `beginbfrange` holds at most 100 ranges


@cache
def glyphless_ttf() -> bytes:
    return Path(__file__).with_name("glyphless.ttf").read_bytes()


class CodeMap:
    """The 2-byte codes of one document's layer: a BMP character is its own code."""

    def __init__(self) -> None:
        self.beyond: dict[str, int] = {}  # a character past U+FFFF -> its surrogate-range code

    def code(self, char: str) -> int:
        point = ord(char)
        if point < 0x10000:
            return _REPLACEMENT if point in _SURROGATES else point
        if char not in self.beyond:
            if len(self.beyond) == len(_SURROGATES):
                return _REPLACEMENT
            self.beyond[char] = _SURROGATES[0] + len(self.beyond)
        return self.beyond[char]

    def hex(self, text: str) -> str:
        return "".join(f"{self.code(c):04X}" for c in text)

    def to_unicode(self) -> bytes:
        """The ToUnicode CMap: each BMP code to itself, each assigned code to its character."""
        ranges = [
            f"<{high:02X}00> <{high:02X}FF> <{high:02X}00>"
            for high in range(0x100)
            if not 0xD8 <= high <= 0xDF
        ]
        body = []
        for start in range(0, len(ranges), _RANGES_PER_BLOCK):
            block = ranges[start : start + _RANGES_PER_BLOCK]
            body.append(f"{len(block)} beginbfrange\n" + "\n".join(block) + "\nendbfrange")
        chars = [
            f"<{code:04X}> <{char.encode('utf-16-be').hex().upper()}>"
            for char, code in self.beyond.items()
        ]
        for start in range(0, len(chars), _RANGES_PER_BLOCK):
            block = chars[start : start + _RANGES_PER_BLOCK]
            body.append(f"{len(block)} beginbfchar\n" + "\n".join(block) + "\nendbfchar")
        return (
            "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
            "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
            "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
            "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n"
            + "\n".join(body)
            + "\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
        ).encode()


def zero_width(char: str) -> bool:
    """A combining mark: drawn over the character before it, so it takes no width (a reader
    then keeps it with that character)."""
    return unicodedata.category(char) in ("Mn", "Me")


@cache
def widths() -> str:
    """The CID font's `/W`: 0 for every combining mark of the BMP (`/DW` for the rest)."""
    ranges: list[tuple[int, int]] = []
    for point in range(0x10000):
        if 0xD800 <= point < 0xE000 or not zero_width(chr(point)):
            continue
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1] = (ranges[-1][0], point)
        else:
            ranges.append((point, point))
    return "[" + " ".join(f"{a} {b} 0" for a, b in ranges) + "]"


def cid_to_gid_map() -> bytes:
    """Every one of the 65,536 codes to glyph 1 (deflated, a few hundred bytes)."""
    return b"\x00\x01" * 0x10000


def descriptor(font_file: int) -> str:
    return (
        f"<< /Type /FontDescriptor /FontName /{FONT_NAME} /Flags 5 "
        f"/FontBBox [0 {DESCENT} {ADVANCE} {ASCENT}] /ItalicAngle 0 /Ascent {ASCENT} "
        f"/Descent {DESCENT} /CapHeight {ASCENT} /StemV 80 /FontFile2 {font_file} 0 R >>"
    )


def cid_font(descriptor_ref: int, gid_map: int) -> str:
    return (
        f"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /{FONT_NAME} "
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> "
        f"/FontDescriptor {descriptor_ref} 0 R /DW {ADVANCE} /W {widths()} "
        f"/CIDToGIDMap {gid_map} 0 R >>"
    )


def type0_font(descendant: int, to_unicode: int) -> str:
    return (
        f"<< /Type /Font /Subtype /Type0 /BaseFont /{FONT_NAME} /Encoding /Identity-H "
        f"/DescendantFonts [{descendant} 0 R] /ToUnicode {to_unicode} 0 R >>"
    )
