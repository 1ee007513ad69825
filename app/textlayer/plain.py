"""Markdown back to plain text, for readers that want the words without the markup."""

from __future__ import annotations

import re

_HEADING = re.compile(r"^#{1,6} ")
_SEPARATOR = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+$")


def plain_text(markdown: str) -> str:
    """Headings without their `#`, table rows as tab-separated cells, paragraphs as they are."""
    lines = []
    for line in markdown.splitlines():
        if _SEPARATOR.match(line.strip()):
            continue
        if line.startswith("|") and line.rstrip().endswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
            line = "\t".join(cell.strip().replace("\\|", "|") for cell in cells)
        lines.append(_HEADING.sub("", line))
    return "\n".join(lines)
