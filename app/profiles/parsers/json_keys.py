"""A JSON object of named text fields (DharmaOCR: header, margin, footer, text; a GUESS)."""

from __future__ import annotations

import json
from typing import Any

from app.profiles.parsers.base import Parsed, Unparseable


def parse_json_keys(text: str, keys: list[str], text_key: str, drop_furniture: bool) -> Parsed:
    """The body (and, unless furniture is dropped, the other keys) joined; fields kept."""
    cleaned = text.strip().removeprefix("```json").removesuffix("```").strip()
    try:
        payload = json.loads(cleaned)
    except json.JSONDecodeError as exc:
        raise Unparseable(f"not JSON: {exc.msg} at {exc.pos}") from exc
    if not isinstance(payload, dict):
        raise Unparseable("not a JSON object")
    missing = [key for key in keys if key not in payload]
    if missing:
        raise Unparseable(f"JSON lacks {', '.join(missing)}")
    shown = [text_key] if drop_furniture else keys
    parts = [str(payload.get(key) or "").strip() for key in shown]
    return Parsed("\n\n".join(p for p in parts if p), {k: payload[k] for k in keys})


def write_json_keys(markdown: str, fields: dict[str, Any], keys: list[str], text_key: str) -> str:
    """An answer in the model's JSON: its own fields where known, the text as the body."""
    payload = {key: fields.get(key, "") for key in keys}
    payload[text_key] = markdown
    return json.dumps(payload, ensure_ascii=False)
