"""The flywheel's pages as Folio reads them: one-page PDFs, their ground truth, and the profile.

Each page image is placed on a PDF page of exactly its size in points, so that Folio's
rendering for the flywheel's profile (the `dpi` rule at 72 DPI: one point, one pixel) gives back
the very pixels the model was trained on (checked in the tests: no difference at all).
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.flywheel import data

PROFILE_ID = "flywheel"
PLAN = "flywheel"
# The longest page is 409 characters (10 x 40 + 9 newlines), one token each; the cap leaves
# room for a run of fill (leaders, rules) to reach `fill_min_covered` (1,024 characters), where
# Folio's detector calls it a loop, inside the server's 2,048-token window (the prompt ~250).
MAX_TOKENS = 1700


@dataclass(frozen=True)
class PageSpec:
    name: str  # document name: the PDF is NAME.pdf, its truth NAME.md
    lines: list[str]


def choose(sources: list[list[str]], count: int, prefix: str, rng: random.Random) -> list[PageSpec]:
    """`count` pages of 1-10 consecutive lines of one source each, in a seeded order: every
    other one a contents page (its lines as leaders), where the taught model loops as real
    OCR models do on contents pages; the others prose, which it reads."""
    usable = [lines for lines in sources if lines]
    pages = []
    for index in range(count):
        lines = data.page_lines(rng.choice(usable), rng, rng.randint(1, data.MAX_LINES))
        contents = index % 2 == 1  # every line a leader: `open ........ 212`
        if contents:
            lines = data.with_leaders(lines, rng, 1.0)
        kind = "contents" if contents else "prose"
        pages.append(PageSpec(f"{prefix}-{kind}-{index:04d}", lines))
    return pages


def pdf_bytes(pixels: np.ndarray) -> bytes:
    """A one-page PDF whose page is the image, at one point a pixel."""
    import pymupdf
    from PIL import Image

    height, width = pixels.shape
    png = io.BytesIO()
    Image.fromarray(pixels).save(png, format="PNG")
    document = pymupdf.open()
    page = document.new_page(width=width, height=height)
    page.insert_image(pymupdf.Rect(0, 0, width, height), stream=png.getvalue())
    return bytes(document.tobytes(garbage=3, deflate=True))


def write_pages(pages: list[PageSpec], atlas: np.ndarray, pdfs: Path, truth: Path) -> str:
    """NAME.pdf under `pdfs`, NAME.md under `truth` (as `folio eval --truth` reads them);
    returns the hash of the page list (names and lines)."""
    pdfs.mkdir(parents=True, exist_ok=True)
    truth.mkdir(parents=True, exist_ok=True)
    for page in pages:
        (pdfs / f"{page.name}.pdf").write_bytes(pdf_bytes(data.draw(page.lines, atlas)))
        (truth / f"{page.name}.md").write_text(data.transcription(page.lines), encoding="utf-8")
    listing = json.dumps([[p.name, p.lines] for p in pages], separators=(",", ":"))
    return hashlib.sha256(listing.encode()).hexdigest()


def profile() -> dict[str, Any]:
    """The `[profiles.flywheel]` table: the prompt the model was trained on, after the image
    (the chat template adds its default system turn, as in training), plain text, greedy."""
    return {
        "id": PROFILE_ID,
        "version": "1",
        "status": "experimental",
        "models": ["tiny-qwen2vl"],
        "note": "The flywheel bench's small Qwen2-VL (bench/flywheel).",
        "request": {
            "prompt": data.PROMPT,
            "order": "image_first",
            "max_tokens": MAX_TOKENS,
            "sampling": {"temperature": 0.0},
        },
        "image": {"rule": "dpi", "value": 72},
        "response": {"format": "markdown", "drop_furniture": False},
    }


def plan(endpoint: str) -> list[dict[str, Any]]:
    """Greedy only: the bench measures the first attempt, and the chosen side comes from the
    ground truth, not a retry (a page that loops fails and scores as an empty answer)."""
    return [{"name": "greedy", "engine": "vlm", "endpoint": endpoint, "temperature": 0.0}]


def settings(database_url: str, endpoints: dict[str, str], models: dict[str, str]
             ) -> dict[str, Any]:  # fmt: skip
    """folio.toml's content: the profile, the plan and one endpoint per served model (the
    endpoint's URL in `endpoints`, its served name in `models`).

    Folio's own client-side detector alone judges loops (no engine plugin, no vLLM
    repetition detection), so base and tuned models are judged the same way."""
    return {
        "database_url": database_url,
        "engine": PLAN,
        "vlm_concurrency": 8,
        # hundreds of pages in flight on one CPU server: a page waits minutes for its turn,
        # and a ladder's four attempts at a loaded server's pace take longer than the product's
        # 30-minute page budget (a bench measures the model, not that budget)
        "page_time_budget_s": 86_400.0,
        # the judge stays the one the committed runs used (the detector, no reading of the
        # page at a verdict): these pages are images, and a Tesseract read at each verdict
        # would change what counts as a loop between runs and cost seconds of CPU a verdict
        "detector_grounding_read": False,
        "plans": {PLAN: plan(next(iter(endpoints)))},
        "vlm_endpoints": {
            name: {
                "base_url": url,
                "model": models[name],
                "profile": PROFILE_ID,
                "engine_plugin": False,
                "server_repetition_detection": False,
                "transport_retry_s": 5,
            }
            for name, url in endpoints.items()
        },
        "profiles": {PROFILE_ID: profile()},
    }


def toml_text(value: dict[str, Any]) -> str:
    """folio.toml from plain data (tables, arrays of tables, strings, numbers, booleans)."""
    lines: list[str] = []
    _table(lines, [], value)
    return "\n".join(lines).strip() + "\n"


def _table(lines: list[str], path: list[str], table: dict[str, Any]) -> None:
    nested = {k: v for k, v in table.items() if isinstance(v, dict)}
    arrays = {k: v for k, v in table.items() if _is_table_array(v)}
    for key, value in table.items():
        if key not in nested and key not in arrays:
            lines.append(f"{_key(key)} = {_inline(value)}")
    for key, value in nested.items():
        lines += ["", f"[{'.'.join(map(_key, [*path, key]))}]"]
        _table(lines, [*path, key], value)
    for key, rows in arrays.items():
        for row in rows:
            lines += ["", f"[[{'.'.join(map(_key, [*path, key]))}]]"]
            _table(lines, [*path, key], row)


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _inline(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    return json.dumps(value)  # strings (JSON escapes are TOML's), ints and floats
