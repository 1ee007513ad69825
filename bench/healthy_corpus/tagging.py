"""Shape tags of a page: which of the issue's healthy shapes it holds (reporting only).

Each tag is a plain test on the text; a page may carry several. The detector never sees them;
they group the false-alarm figures and the shape statistics.
"""

import re
from collections.abc import Callable

_MD_ROW = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)
_HTML_ROW = re.compile(r"<tr\b.*?</tr>", re.IGNORECASE | re.DOTALL)
_HTML_CELL = re.compile(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", re.IGNORECASE | re.DOTALL)
_NUMERIC_CELL = re.compile(r"^[\s$€£¥(−–-]*[\d.,]+%?\)?\s*$")
_LEADER = re.compile(r"(?:\.\s?){5,}\s*\(?[\divxlc]+\)?\s*\|?\s*$|…{2,}\s*\d+\s*$", re.MULTILINE)
_MRZ = re.compile(r"[A-Z0-9<]{20,}<<[A-Z0-9<]*")
# A numbered entry with a year, or an author's initial followed by a year on one line.
_REFERENCE = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\[\d+\]|\d+\.|\(\d+\))\s+\S.*\b(?:19|20)\d\d\b"
    r"|^[^\n]{0,200}?\b[A-Z]\.,? [^\n]{0,300}?\b(?:19|20)\d\d[a-z]?\b",
    re.MULTILINE,
)
_FORM_BLANK = re.compile(r"_{6,}|[☐☑☒□■]|\[[ xX]\]|<checkbox_|:\s*\.{6,}")
_SHELL = re.compile(
    r"^\s*(?:\$ |sudo |docker |pip |python |export |curl |git |--?[a-z][\w-]*[ =])", re.MULTILINE
)
_MATH = re.compile(
    r"\$\$|\\\(|\\\[|\\(?:frac|sum|int|alpha|beta|mathbf|mathrm|left|right)\b|<formula>"
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_LETTER = re.compile(r"[^\W\d_]")
_COUNTED = re.compile(
    r"^\s*(?:[-*]\s*)?(?:Figure|Fig\.|Table|Image|Chart|Picture)\s*\d+",
    re.IGNORECASE | re.MULTILINE,
)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b|<!-- image -->")
_BADGE = re.compile(r"img\.shields\.io|badge", re.IGNORECASE)


def table_rows(text: str) -> list[list[str]]:
    """The cells of every markdown or HTML table row of `text`."""
    rows = [row.strip().strip("|").split("|") for row in _MD_ROW.findall(text)]
    rows += [_HTML_CELL.findall(row) for row in _HTML_ROW.findall(text)]
    return [[cell.strip() for cell in row] for row in rows if row]


def _tables(text: str) -> list[str]:
    rows = table_rows(text)
    tags: list[str] = []
    if not rows:
        return tags
    tags.append("table")
    if max(len(row) for row in rows) >= 10:
        tags.append("wide_table")
    body = [row for row in rows if not all(cell and set(cell) <= set("-: ") for cell in row)]
    cells = [cell for row in body for cell in row]
    if len(cells) >= 20:
        empty = sum(1 for cell in cells if not cell or cell in ("<br>", "&nbsp;"))
        if empty / len(cells) >= 0.3:
            tags.append("sparse_table")
        numeric = sum(1 for cell in cells if _NUMERIC_CELL.match(cell))
        if numeric / len(cells) >= 0.4:
            tags.append("numeric_table")
    return tags


def _cjk(text: str) -> bool:
    letters = len(_LETTER.findall(text))
    return letters > 0 and len(_CJK.findall(text)) / letters >= 0.2


_TESTS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("html_table", lambda t: "<table" in t.lower()),
    ("mrz", lambda t: _MRZ.search(t) is not None),
    ("form", lambda t: len(_FORM_BLANK.findall(t)) >= 2),
    ("toc_leaders", lambda t: len(_LEADER.findall(t)) >= 3),
    ("references", lambda t: len(_REFERENCE.findall(t)) >= 5),
    ("code", lambda t: "```" in t or "<code" in t),
    ("shell_config", lambda t: len(_SHELL.findall(t)) >= 3),
    ("math", lambda t: len(_MATH.findall(t)) >= 2),
    ("cjk", _cjk),
    ("figure_list", lambda t: len(_COUNTED.findall(t)) >= 5),
    ("images", lambda t: len(_IMAGE.findall(t)) >= 5),
    ("badges", lambda t: len(_BADGE.findall(t)) >= 3),
    ("front_matter", lambda t: t.startswith("---\n") and "\n---" in t[4:]),
)


def shape_tags(text: str, fmt: str) -> list[str]:
    """The shape tags of one page (its format first)."""
    tags = [fmt, *_tables(text)]
    tags += [name for name, test in _TESTS if test(text)]
    return tags
