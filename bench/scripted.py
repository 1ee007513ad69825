"""Folio's real VLM engine, asking the scripted test server to replay a given text.

The server side is the test-only logits processor in tests/vllm_cpu/scripted: a request whose
`vllm_xargs` carry `folio_script` decodes that text token by token (real forward passes, real
KV cache), then EOS. Here a page carries two scripts: what its first, greedy read produces (a
loop on a degenerate page) and what any other read produces (the page's healthy text).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from app.domain import PageInput
from app.engines.vlm import VlmEngine
from app.engines.vlm_stops import ABORT_PATHS, LOOP_STOP_ARG, EndpointStops
from app.settings import PlanStep
from tests.vllm_cpu.server import root_url_of

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
    """VlmEngine whose requests carry the page's script; everything else is Folio's own.

    `extra_body` adds request fields per benchmark arm (e.g. a repetition_detection of
    another size, the plugin's xargs) over what Folio's engine sends."""

    extra_body: Mapping[str, Any] = {}

    def request_body(
        self, page: PageInput, step: PlanStep, stops: EndpointStops | None = None
    ) -> dict[str, Any]:
        body = super().request_body(page, step, stops)
        for key, value in self.extra_body.items():
            merge = isinstance(value, dict) and isinstance(body.get(key), dict)
            body[key] = {**body[key], **value} if merge else value
        if isinstance(page, ScriptedPage):
            body = with_script(body, page.script_for(step))
        return body


def tokens_per_char(base_url: str, model: str, text: str) -> float:
    """The served tokenizer's tokens per character of `text` (vLLM's /tokenize)."""
    response = httpx.post(
        f"{root_url_of(base_url)}/tokenize",
        json={"model": model, "prompt": text, "add_special_tokens": False},
        timeout=60,
    )
    response.raise_for_status()
    return int(response.json()["count"]) / max(1, len(text))


def cut_to_tokens(text: str, start_fraction: float, tokens: int, per_char: float) -> str:
    """About `tokens` tokens of `text` from a line start near `start_fraction` of it, ending
    at a line or word end; wraps around to the start when the text runs out (a page asking for
    the whole text from its start gets it whole)."""
    want = max(1, round(tokens / per_char))
    if start_fraction == 0 and want >= len(text):
        return text.rstrip()
    start = text.rfind("\n", 0, int(start_fraction * len(text))) + 1
    piece = (text[start:] + "\n\n" + text)[:want]
    end = max(piece.rfind("\n"), piece.rfind(" "))
    return piece[:end].rstrip() if end > want // 2 else piece.rstrip()


def require_scripted_server(base_url: str, model: str = "tiny-qwen2vl") -> None:
    """Raise unless the server replays scripts (its venv has tests/vllm_cpu/scripted)."""
    probe = "Scripted decoding is installed."
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Transcribe the text on this page."}],
        "max_tokens": 40,
        "vllm_xargs": {SCRIPT_ARG: probe},
    }
    response = httpx.post(f"{base_url.rstrip('/')}/chat/completions", json=body, timeout=120)
    response.raise_for_status()
    if response.json()["choices"][0]["message"]["content"] != probe:
        raise RuntimeError(
            "the vLLM server does not replay scripts: run tests/vllm_cpu/setup_env.sh, which "
            "installs the scripted-decoding test processor into the server's venv"
        )


def plugin_loaded(base_url: str, model: str = "tiny-qwen2vl") -> bool:
    """Whether the server runs Folio's vLLM plugin: a scripted loop that asks for the
    plugin's stop ends (EOS) long before its cap only when the plugin is there (the engine's
    own probe only checks that the argument is understood)."""
    cap = 200
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Transcribe the text on this page."}],
        "max_tokens": cap,
        "vllm_xargs": {LOOP_STOP_ARG: 1, SCRIPT_ARG: "Total due: 12.50 EUR\n" * 400},
    }
    response = httpx.post(f"{base_url.rstrip('/')}/chat/completions", json=body, timeout=120)
    if response.status_code >= 400:
        return False
    usage = response.json().get("usage") or {}
    return int(usage.get("completion_tokens") or cap) < cap


def abort_route(base_url: str) -> str | None:
    """The server's abort-by-id route, if it has one (a made-up id aborts nothing)."""
    root = root_url_of(base_url)
    for path in ABORT_PATHS:
        body = {"request_ids": ["folio-bench-probe"]}
        with contextlib.suppress(httpx.HTTPError):
            if httpx.post(root + path, json=body, timeout=10).status_code == 200:
                return path
    return None
