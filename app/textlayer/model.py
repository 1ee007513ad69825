"""A page's text layer as plain values: what the PDF seam reads and the text-layer room judges."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def width(self) -> float:
        return max(0.0, self.x1 - self.x0)

    @property
    def height(self) -> float:
        return max(0.0, self.y1 - self.y0)

    @property
    def area(self) -> float:
        return self.width * self.height

    def overlap(self, other: Box) -> float:
        """Area shared with `other`."""
        width = min(self.x1, other.x1) - max(self.x0, other.x0)
        height = min(self.y1, other.y1) - max(self.y0, other.y0)
        return max(0.0, width) * max(0.0, height)

    def contains_center_of(self, other: Box) -> bool:
        cx, cy = (other.x0 + other.x1) / 2, (other.y0 + other.y1) / 2
        return self.x0 <= cx <= self.x1 and self.y0 <= cy <= self.y1


@dataclass(frozen=True)
class Glyph:
    """One character as the PDF places it: what a formula's layout is read from."""

    char: str
    box: Box
    size: float
    baseline: float  # y of its origin: superscripts sit above their base's, subscripts below
    bold: bool = False
    font: str = ""  # the font's name: TeX's math fonts (CMMI, CMSY, PazoMath) mark formulas


@dataclass(frozen=True)
class TextLine:
    """One line of text as the PDF places it, with the style that marks headings."""

    text: str
    box: Box
    size: float
    bold: bool
    block: int
    invisible: bool = False
    vertical: bool = False
    glyphs: tuple[Glyph, ...] = ()  # read only on pages with math signs


@dataclass(frozen=True)
class TableGrid:
    """A table the PDF's rulings (or text alignment) outline: rows of cell texts."""

    box: Box
    rows: list[list[str]]
    columns: list[tuple[float, float]] = field(default_factory=list)  # x0, x1 of each column


@dataclass(frozen=True)
class PageLayout:
    """Everything the text layer offers about one page, in PDF points (origin top left)."""

    width: float
    height: float
    lines: list[TextLine] = field(default_factory=list)
    images: list[Box] = field(default_factory=list)
    tables: list[TableGrid] = field(default_factory=list)
    neighbour_edges: list[list[str]] = field(default_factory=list)

    @property
    def box(self) -> Box:
        return Box(0.0, 0.0, self.width, self.height)

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)
