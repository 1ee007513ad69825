"""One small pure parser per answer format; `parse_answer` picks it from the profile."""

from __future__ import annotations

from app.profiles.model import ResponseRule
from app.profiles.parsers.base import Parsed, Unparseable
from app.profiles.parsers.doctags import parse_doctags
from app.profiles.parsers.dots_layout import parse_dots_layout
from app.profiles.parsers.front_matter import parse_front_matter
from app.profiles.parsers.grounding import parse_grounding
from app.profiles.parsers.html_blocks import parse_html_blocks
from app.profiles.parsers.json_keys import parse_json_keys
from app.profiles.parsers.markdown import parse_markdown

__all__ = ["Parsed", "Unparseable", "parse_answer"]


def parse_answer(rule: ResponseRule, text: str) -> Parsed:
    """The answer as Markdown plus its structured fields; Unparseable when it is not in the
    format the profile expects."""
    drop = rule.drop_furniture
    match rule.format:
        case "yaml_front_matter":
            return parse_front_matter(text)
        case "json_keys":
            return parse_json_keys(text, rule.json_keys, rule.text_key, drop)
        case "dots_layout_json":
            return parse_dots_layout(text, drop)
        case "deepseek_grounding":
            return parse_grounding(text)
        case "html_blocks":
            return parse_html_blocks(text, drop)
        case "doctags":
            return parse_doctags(text, drop)
    return parse_markdown(text)
