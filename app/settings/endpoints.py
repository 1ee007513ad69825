"""The OpenAI-compatible servers VLM plan steps name (`vlm_endpoints`), and the default one."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field

from app.profiles import BUILTIN
from app.settings.section import Section

DEFAULT_PROFILE = "olmocr2"


class VlmEndpoint(Section):
    """An OpenAI-compatible server (vLLM, SGLang, llama.cpp server, a hosted API)."""

    base_url: str = Field(description="Base URL including /v1, e.g. http://127.0.0.1:8000/v1.")
    model: str = Field(description="Model name the server expects.")
    api_key: str | None = Field(
        default=None, description="Bearer token, when the server needs one."
    )
    profile: str | None = Field(
        default=None,
        validation_alias=AliasChoices("profile", "prompt"),
        description="Model profile (`folio models` lists them; `prompt` is the old name): how "
        "to ask the model, size its image and read its answer. Unset: the profile whose model "
        "names match `model`, else the generic `markdown`.",
    )
    max_tokens: int | None = Field(
        default=None, description="Completion token cap; the profile's when unset."
    )
    openai_fields_only: bool = Field(
        default=False,
        description="The server takes only the OpenAI API's decoding fields (a hosted API): "
        "the profile's repetition_penalty and top_k are not sent.",
    )
    max_concurrency: int = Field(default=64, description="Concurrent requests to this endpoint.")
    request_timeout_s: float = Field(default=600.0, description="Per-request read timeout.")
    transport_retry_s: float = Field(
        default=300.0,
        description="How long a page keeps retrying an unreachable endpoint before moving on.",
    )
    max_image_side: int | None = Field(
        default=None,
        description="Longest image side sent, in pixels, instead of the profile's image rule.",
    )
    server_repetition_detection: bool | Literal["auto"] = Field(
        default=False,
        description="Ask vLLM (>= 0.17) to stop exact token repeats server-side "
        "(repetition_detection); auto: when the start-up probe finds it and not Folio's "
        "plugin. Off by default: it stops healthy pages (table rules, leaders; 95 of 400 "
        "healthy pages in bench scale), which Folio's detector and close leave alone.",
    )
    engine_plugin: bool | Literal["auto"] = Field(
        default="auto",
        description="Ask Folio's vLLM plugin to end loops inside the engine step "
        "(vllm_xargs folio_loop_stop); auto: when the start-up probe finds it and proves it "
        "live. On a GPU server it costs 12-20% of a decode step: docs/loop-stop-gpu.md.",
    )
    stream_interval: int | None = Field(
        default=None,
        ge=1,
        description="vLLM's per-request stream_interval: tokens per streamed chunk (vLLM "
        "default 1). Fewer chunks cost the client less CPU per token; a verdict may then come "
        "up to N-1 tokens later.",
    )
    abort_call: bool | Literal["auto"] = Field(
        default="auto",
        description="Abort a looping request by id (POST /abort_requests) when Folio's "
        "detector fires; auto: when the start-up probe finds the route.",
    )
    close_probe: bool = Field(
        default=True,
        description="Where closing the stream is the loop stop relied on, probe once at "
        "start-up that a close stops the server's work (a long request closed early, judged "
        "by the server's /metrics; recorded on each attempt as loop_stop_close).",
    )
    metrics_url: str | None = Field(
        default=None,
        description=(
            "The server's Prometheus metrics (vLLM's /metrics), sampled at job start and end "
            "for server-side token accounting; default: base_url without /v1, plus /metrics; "
            "'off' disables."
        ),
    )
    usd_per_gpu_hour: float | None = Field(default=None, description="GPU price for cost reports.")
    gpus: int = Field(default=1, description="GPUs behind this endpoint, for cost reports.")
    usd_per_m_input: float | None = Field(default=None, description="Price per 1M prompt tokens.")
    usd_per_m_output: float | None = Field(default=None, description="Price per 1M output tokens.")


def metrics_url_of(endpoint: VlmEndpoint) -> str | None:
    """Where the endpoint's server publishes its counters, or None when switched off."""
    if endpoint.metrics_url == "off":
        return None
    if endpoint.metrics_url:
        return endpoint.metrics_url
    return endpoint.base_url.rstrip("/").removesuffix("/v1") + "/metrics"


def default_endpoints() -> dict[str, VlmEndpoint]:
    return {
        "primary": VlmEndpoint(
            base_url="http://127.0.0.1:8000/v1",
            model=BUILTIN[DEFAULT_PROFILE].models[0],
            profile=DEFAULT_PROFILE,
        )
    }
