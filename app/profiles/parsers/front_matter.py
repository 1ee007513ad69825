"""olmOCR-2's YAML front matter then Markdown, read as `olmocr/train/front_matter.py:37-100`
reads it (allenai/olmocr@f7cfe4c2): every field required, none extra, rotation one of four."""

from __future__ import annotations

from typing import Any

import yaml

from app.profiles.parsers.base import Parsed, Unparseable

FIELDS = ("primary_language", "is_rotation_valid", "rotation_correction", "is_table", "is_diagram")
_BOOLS = ("is_rotation_valid", "is_table", "is_diagram")


def parse_front_matter(text: str) -> Parsed:
    """The body as Markdown and the front matter's five fields; Unparseable otherwise."""
    if not text.startswith("---\n"):
        raise Unparseable("no front matter (the answer must start with ---)")
    end = text.find("\n---", 4)
    if end == -1:
        raise Unparseable("front matter never closed")
    try:
        loaded = yaml.safe_load(text[4:end]) or {}
    except yaml.YAMLError as exc:
        raise Unparseable(f"front matter is not YAML: {exc}") from exc
    if not isinstance(loaded, dict):
        raise Unparseable("front matter is not a mapping")
    return Parsed(text[end + 4 :].strip(), _fields(loaded))


def _fields(loaded: dict[str, Any]) -> dict[str, Any]:
    missing = [name for name in FIELDS if name not in loaded]
    if missing:
        raise Unparseable(f"front matter lacks {', '.join(missing)}")
    extra = sorted(set(loaded) - set(FIELDS))
    if extra:
        raise Unparseable(f"front matter has unexpected fields {', '.join(map(str, extra))}")
    fields: dict[str, Any] = {}
    language = loaded["primary_language"]
    # YAML reads `no` (Norwegian) as False: olmOCR turns a bool into None, as here.
    fields["primary_language"] = None if isinstance(language, bool) or not language else language
    for name in _BOOLS:
        value = loaded[name]
        fields[name] = value.lower() == "true" if isinstance(value, str) else value
        if not isinstance(fields[name], bool):
            raise Unparseable(f"{name} is not a boolean")
    try:
        rotation = int(loaded["rotation_correction"])
    except (TypeError, ValueError) as exc:
        raise Unparseable("rotation_correction is not a number") from exc
    if rotation not in (0, 90, 180, 270):
        raise Unparseable("rotation_correction must be one of 0, 90, 180, 270")
    fields["rotation_correction"] = rotation
    return fields


def write_front_matter(markdown: str, fields: dict[str, Any]) -> str:
    """An answer as olmOCR-2 writes it (tests/sample_dataset/*/*.md): Python-style booleans."""
    values = {
        "primary_language": fields.get("primary_language") or "en",
        "is_rotation_valid": fields.get("is_rotation_valid", True),
        "rotation_correction": fields.get("rotation_correction", 0),
        "is_table": fields.get("is_table", "<table" in markdown),
        "is_diagram": fields.get("is_diagram", False),
    }
    lines = [f"{name}: {values[name]}" for name in FIELDS]
    body = f"\n{markdown}" if markdown else ""
    return "---\n" + "\n".join(lines) + "\n---" + body
