"""Single pages cut out of a PDF, text layer included (for evaluations on chosen pages)."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from app.errors import DocumentError


def extract_page(source: Path, number: int, dest: Path) -> int:
    """Write page `number` (1-based) of `source` as a one-page PDF at `dest`; return how many
    pages `source` has."""
    try:
        with pymupdf.open(source, filetype="pdf") as doc:
            if not 1 <= number <= doc.page_count:
                raise DocumentError("page", f"{source.name} has no page {number}")
            with pymupdf.open() as single:
                single.insert_pdf(doc, from_page=number - 1, to_page=number - 1)
                single.save(dest)
            return int(doc.page_count)
    except (RuntimeError, ValueError) as exc:
        raise DocumentError("document", f"{source}: {exc}") from exc
