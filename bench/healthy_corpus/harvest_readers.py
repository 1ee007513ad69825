"""How a harvested file becomes the text of its pages.

Ground-truth collections keep a page's transcription inside layout XML (PAGE-XML from
Transkribus and OCR-D, ALTO from eScriptorium) or, for the SROIE receipts, one CSV row per text
line with its box. The text is taken as a reader of the page would write it: lines in the
file's order, one per line, a blank line between regions or blocks. Coordinates, baselines and
word-level duplicates of a line's text are left out: they are the file format, not the page.
The ICDAR 2013 table competition's structure files hold each table's cells by row and column,
on a numbered page of its PDF: each page's tables are written as Markdown tables, a cell's
lines joined by a space (`PAGED_READERS`: one file, several pages). Textract answers only as
its SDK's JSON: its text is its LINE blocks, page by page, in the response's order. hOCR
(Tesseract, Scribe) is read as its lines of words, a blank line between paragraphs. A bench's
run record (JSON with the engine's Markdown answer in `text_md`, beside boxes and timings) is
read for that answer.
"""

import html
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(element: ET.Element, name: str) -> Iterator[ET.Element]:
    return (child for child in element if _local(child.tag) == name)


def _equiv_text(element: ET.Element) -> str | None:
    """The `TextEquiv/Unicode` directly under `element` (the first, as PAGE orders them)."""
    for equiv in _children(element, "TextEquiv"):
        for unicode in _children(equiv, "Unicode"):
            return unicode.text or ""
    return None


def _reading_order(root: ET.Element) -> dict[str, int]:
    """Region id -> its place in the page's `ReadingOrder` (empty where it has none)."""
    return {
        ref.get("regionRef", ""): int(ref.get("index", "0"))
        for ref in root.iter()
        if _local(ref.tag) == "RegionRefIndexed"
    }


def page_xml_text(raw: bytes) -> str:
    """A PAGE-XML page's transcription: its regions in the page's reading order (where it has
    one; document order otherwise, and for regions it leaves out, after those it orders), each
    region's lines, the region's own text where it has no lines (nested regions, such as table
    cells, in document order)."""
    root = ET.fromstring(raw)
    order = _reading_order(root)
    regions = [element for element in root.iter() if _local(element.tag) == "TextRegion"]
    ranked = sorted(
        enumerate(regions),
        key=lambda item: (order.get(item[1].get("id", ""), len(order)), item[0]),
    )
    blocks = []
    for _, region in ranked:
        lines = [_equiv_text(line) for line in _children(region, "TextLine")]
        kept = [line for line in lines if line and line.strip()]
        if not kept and not any(_local(child.tag) == "TextRegion" for child in region):
            own = _equiv_text(region)
            kept = [own] if own and own.strip() else []
        if kept:
            blocks.append("\n".join(kept))
    return "\n\n".join(blocks)


def alto_text(raw: bytes) -> str:
    """An ALTO page's transcription: each block's lines, a line's strings joined by spaces."""
    root = ET.fromstring(raw)
    blocks = []
    for block in root.iter():
        if _local(block.tag) != "TextBlock":
            continue
        lines = []
        for line in _children(block, "TextLine"):
            words = [node.get("CONTENT", "") for node in line if _local(node.tag) == "String"]
            text = " ".join(word for word in words if word)
            if text.strip():
                lines.append(text)
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def box_csv_text(raw: bytes) -> str:
    """SROIE's box file: `x1,y1,x2,y2,x3,y3,x4,y4,text` per line; the text, one per line."""
    rows = raw.decode("utf-8", errors="strict").splitlines()
    lines = [row.split(",", 8)[8] for row in rows if row.count(",") >= 8]
    return "\n".join(line for line in lines if line.strip())


def run_record_answer(raw: bytes) -> str:
    """The engine's Markdown answer in a run record (empty where the run failed)."""
    return str(json.loads(raw).get("text_md") or "")


def plain_text(raw: bytes) -> str:
    return raw.decode("utf-8")


def _markdown_table(cells: list[ET.Element]) -> str:
    grid: dict[tuple[int, int], str] = {}
    for cell in cells:
        content = next(_children(cell, "content"), None)
        text = " ".join(((content.text if content is not None else "") or "").split())
        grid[(int(cell.get("start-row", "0")), int(cell.get("start-col", "0")))] = text
    rows = 1 + max(row for row, _ in grid)
    cols = 1 + max(col for _, col in grid)
    lines = [
        "| " + " | ".join(grid.get((r, c), "") for c in range(cols)) + " |" for r in range(rows)
    ]
    lines.insert(1, "|" + "---|" * cols)
    return "\n".join(lines)


def icdar_tables(raw: bytes) -> dict[int, str]:
    """Page number -> that page's tables as Markdown, from an ICDAR 2013 `-str.xml` file."""
    pages: dict[int, list[str]] = {}
    for region in ET.fromstring(raw).iter("region"):
        cells = list(region.iter("cell"))
        if cells:
            pages.setdefault(int(region.get("page", "1")), []).append(_markdown_table(cells))
    return {page: "\n\n".join(tables) for page, tables in sorted(pages.items())}


def textract_pages(raw: bytes) -> dict[int, str]:
    """Page number -> the LINE blocks' text of a Textract response, one line each."""
    pages: dict[int, list[str]] = {}
    for block in json.loads(raw).get("Blocks", []):
        if block.get("BlockType") == "LINE" and block.get("Text", "").strip():
            pages.setdefault(int(block.get("Page", 1)), []).append(block["Text"])
    return {page: "\n".join(lines) for page, lines in sorted(pages.items())}


_HOCR_PAR = re.compile(r"<(?:p|div)\b[^>]*class=['\"]ocr_(?:par|carea)['\"]")
_HOCR_LINE = re.compile(r"<span\b[^>]*class=['\"]ocr_(?:line|header|caption|textfloat)['\"]")
_HOCR_WORD = re.compile(r"<span\b[^>]*class=['\"]ocrx_word['\"][^>]*>(.*?)</span>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def hocr_text(raw: bytes) -> str:
    """An hOCR page's words, a line per `ocr_line`, a blank line between paragraphs."""
    document = raw.decode("utf-8")
    blocks = []
    for paragraph in _HOCR_PAR.split(document)[1:] or [document]:
        lines = []
        for line in _HOCR_LINE.split(paragraph)[1:]:
            words = [html.unescape(_TAG.sub("", word)).strip() for word in _HOCR_WORD.findall(line)]
            text = " ".join(word for word in words if word)
            if text:
                lines.append(text)
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


PAGED_READERS: dict[str, Callable[[bytes], dict[int, str]]] = {
    "icdar-tables": icdar_tables,
    "textract-lines": textract_pages,
}

READERS: dict[str, Callable[[bytes], str]] = {
    "text": plain_text,
    "page-xml": page_xml_text,
    "alto": alto_text,
    "box-csv": box_csv_text,
    "hocr": hocr_text,
    "text-md": run_record_answer,
}
