"""A retry that resumes past a loop instead of reading the page again (issue 51).

The retry keeps the cut attempt's text up to the loop's onset (`app.retry.plan.resume_prefix`)
and sends it as the assistant's last turn, which vLLM's chat API continues
(`continue_final_message`, with `add_generation_prompt` off): the retry's decoding applies to
the continuation only, and the healthy text before the loop is prefilled, not generated again.
The stream's detector reads the kept text first, so a loop across the join is seen, and the
answer judged is the kept text and the continuation together. A hosted API that takes only
OpenAI's fields (`openai_fields_only`) reads the page again instead.
"""

from __future__ import annotations

from typing import Any

from app.domain import PageInput

RESUME_FIELDS = {"continue_final_message": True, "add_generation_prompt": False}


def kept_text(page: PageInput, openai_fields_only: bool) -> str:
    """The text this attempt continues ("" where it reads the page afresh)."""
    return "" if openai_fields_only or not page.resume_from else page.resume_from


def resumed_body(body: dict[str, Any], kept: str) -> dict[str, Any]:
    """The request with `kept` as the assistant's last turn, to be continued."""
    turn = {"role": "assistant", "content": kept}
    return body | {"messages": [*body["messages"], turn], **RESUME_FIELDS}
