"""Folio's real VLM engine, asking the scripted test server to replay a given text.

The server side is the test-only logits processor in tests/vllm_cpu/scripted: a request whose
`vllm_xargs` carry `folio_script` decodes that text token by token (real forward passes, real
KV cache), then EOS. Here a page carries two scripts: what its first, greedy read produces (a
loop on a degenerate page) and what any other read produces (the page's healthy text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.domain import PageInput
from app.engines.vlm import VlmEngine
from app.settings import PlanStep

SCRIPT_ARG = "folio_script"  # the xarg the test processor reads
LOOPING_STEP = "greedy"


@dataclass(frozen=True)
class ScriptedPage(PageInput):
    """A page plus the texts the scripted server writes for it."""

    healthy_text: str = ""
    looping_text: str | None = None  # None: every read of this page is healthy

    def script_for(self, step: PlanStep) -> str:
        if step.name == LOOPING_STEP and self.looping_text is not None:
            return self.looping_text
        return self.healthy_text


def with_script(body: dict[str, Any], script: str) -> dict[str, Any]:
    """The request body with the script added to its `vllm_xargs` (others' xargs kept)."""
    return {**body, "vllm_xargs": {**(body.get("vllm_xargs") or {}), SCRIPT_ARG: script}}


class ScriptedVlmEngine(VlmEngine):
    """VlmEngine whose requests carry the page's script; everything else is Folio's own."""

    def request_body(self, page: PageInput, step: PlanStep) -> dict[str, Any]:
        body = super().request_body(page, step)
        if isinstance(page, ScriptedPage):
            body = with_script(body, page.script_for(step))
        return body
