"""Per-model prompt profiles: what the engine asks for, and how it reads the answer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MARKDOWN_PROMPT = (
    "Transcribe all text on this page image to Markdown, in reading order. Use Markdown tables "
    "for tables and LaTeX for formulas. Output only the transcription."
)
DHARMA_PROMPT = (
    "Extract the text of this document page. Answer with a JSON object with the keys "
    '"header", "margin", "footer" and "text", each a string (empty when absent).'
)
_DHARMA_KEYS = ("header", "text", "margin", "footer")


@dataclass(frozen=True)
class PromptProfile:
    name: str
    version: str
    instruction: str

    def messages(self, image_url: str) -> list[dict[str, Any]]:
        """Chat messages with the page image; the same shape is exported as DPO prompts."""
        return [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": image_url}},
                    {"type": "text", "text": self.instruction},
                ],
            }
        ]

    def parse(self, output: str) -> str:
        """The page text inside the model's answer."""
        if self.name != "dharma":
            return output.strip()
        return parse_dharma(output)


def parse_dharma(output: str) -> str:
    """DharmaOCR's JSON answer as plain text; the raw output when it is not valid JSON."""
    cleaned = output.strip().removeprefix("```json").removesuffix("```").strip()
    try:
        payload = json.loads(cleaned)
    except json.JSONDecodeError:
        return output.strip()
    if not isinstance(payload, dict):
        return output.strip()
    parts = [str(payload.get(key) or "").strip() for key in _DHARMA_KEYS]
    return "\n\n".join(part for part in parts if part)


PROFILES = {
    "markdown": PromptProfile("markdown", "markdown-v1", MARKDOWN_PROMPT),
    "dharma": PromptProfile("dharma", "dharma-json-v1", DHARMA_PROMPT),
}
