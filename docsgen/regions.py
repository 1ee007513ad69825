"""Generated regions inside hand-written Markdown pages.

A page keeps its prose and marks where code-generated text goes:

    <!-- generated: cli -->
    ...written by `python -m docsgen write`...
    <!-- end generated: cli -->

so the prose can be edited freely while the region is rewritten (or checked) from the code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


class RegionMissing(ValueError):
    """The page has no (or an unbalanced) marker pair for the region."""


def _pattern(name: str) -> re.Pattern[str]:
    start = re.escape(f"<!-- generated: {name} -->")
    end = re.escape(f"<!-- end generated: {name} -->")
    return re.compile(rf"({start}\n)(.*?)(^{end})", re.DOTALL | re.MULTILINE)


def read_region(text: str, name: str) -> str:
    found = _pattern(name).search(text)
    if found is None:
        raise RegionMissing(f"no '<!-- generated: {name} -->' ... '<!-- end generated: {name} -->'")
    return found.group(2).strip("\n")


def replace_region(text: str, name: str, body: str) -> str:
    read_region(text, name)  # raises when the markers are missing
    filled = body.strip("\n") + "\n"
    return _pattern(name).sub(lambda m: m.group(1) + filled + m.group(3), text, count=1)


@dataclass(frozen=True)
class Region:
    """One generated region: the page it lives in, its name, and what it should hold now."""

    page: Path
    name: str
    body: str

    def is_current(self) -> bool:
        return read_region(self.page.read_text(encoding="utf-8"), self.name) == self.body.strip(
            "\n"
        )

    def write(self) -> bool:
        """Rewrite the region; True when the page changed."""
        text = self.page.read_text(encoding="utf-8")
        updated = replace_region(text, self.name, self.body)
        if updated != text:
            self.page.write_text(updated, encoding="utf-8")
        return updated != text
