"""An answer written back in the model's own format (for DPO's chosen side): the format the
model was trained to answer in, so training never teaches it another."""

from __future__ import annotations

import json
from typing import Any

from app.profiles.model import Profile
from app.profiles.parsers.front_matter import write_front_matter
from app.profiles.parsers.json_keys import write_json_keys


def write_answer(profile: Profile, markdown: str, fields: dict[str, Any]) -> str | None:
    """`markdown` (and the structured `fields` of an answer in this format, where known) as
    the model writes it; None where the format cannot be rebuilt from Markdown (boxes)."""
    rule = profile.response
    match rule.format:
        case "markdown":
            return markdown
        case "yaml_front_matter":
            return write_front_matter(markdown, fields)
        case "json_keys":
            return write_json_keys(markdown, fields, rule.json_keys, rule.text_key)
        case "dots_layout_json" if "layout" in fields:
            return json.dumps(fields["layout"], ensure_ascii=False)
    return None
