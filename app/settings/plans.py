"""Attempt plans: the steps a page goes down (`plans`), the built-in ones (the `vlm` plan follows
the primary endpoint's profile), and the settings that choose a plan and size its work."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from app.errors import ConfigError
from app.profiles import BUILTIN, resolve_profile
from app.profiles.model import Profile
from app.settings.endpoints import DEFAULT_PROFILE, VlmEndpoint, default_endpoints
from app.settings.section import Section

EngineKind = Literal["textlayer", "tesseract", "vlm"]


class PlanStep(Section):
    """One rung of an attempt plan: which engine, and how to decode when it is a VLM."""

    name: str = Field(description="Label of the step, shown in reports (e.g. 'greedy').")
    engine: EngineKind = Field(description="Engine that runs this step.")
    endpoint: str | None = Field(
        default=None, description="Name of a `vlm_endpoints` entry; required for engine 'vlm'."
    )
    temperature: float | None = Field(default=None, description="Sampling temperature.")
    top_p: float | None = Field(default=None, description="Nucleus sampling mass.")
    repetition_penalty: float | None = Field(default=None, description="vLLM repetition penalty.")
    presence_penalty: float | None = Field(default=None, description="OpenAI presence penalty.")
    frequency_penalty: float | None = Field(default=None, description="OpenAI frequency penalty.")
    seed: int | None = Field(default=None, description="Sampling seed.")
    max_tokens: int | None = Field(
        default=None, description="Token cap for this step; the endpoint's default when unset."
    )
    ngram_guard: int | None = Field(
        default=None,
        ge=2,
        description="Decode-time guard (needs Folio's vLLM plugin): ban a token that would repeat "
        "an n-gram of this many tokens from the recent output; table-cell markup is exempt.",
    )
    ngram_window: int | None = Field(
        default=None,
        ge=2,
        description="Output tokens the n-gram guard looks back over (the plugin's 128 when unset).",
    )
    loop_stop: bool = Field(
        default=True,
        description="Stop the attempt at a loop verdict (Folio's detector, the plugin, vLLM's "
        "repetition_detection); off: it runs to its own end or max_tokens, and an answer cut "
        "at the cap is refused. A confirming attempt relaxes it for the repeated unit only.",
    )
    resume_after_loop: bool = Field(
        default=False,
        description="After an attempt a loop verdict cut, keep its text up to the loop's "
        "onset and ask the model to continue it (vLLM's chat continue_final_message) under "
        "this step's decoding, instead of reading the page again; the joined answer is "
        "judged as a whole. Needs a vLLM server (not with openai_fields_only).",
    )

    @model_validator(mode="after")
    def _vlm_needs_endpoint(self) -> PlanStep:
        if self.engine == "vlm" and not self.endpoint:
            raise ValueError(f"plan step {self.name!r}: engine 'vlm' needs an endpoint")
        return self

    def sampling(self) -> dict[str, float | int]:
        """The decoding parameters that are set, as sent to the engine."""
        keys = (
            "temperature",
            "top_p",
            "repetition_penalty",
            "presence_penalty",
            "frequency_penalty",
            "seed",
            "max_tokens",
            "ngram_guard",
            "ngram_window",
        )
        return {k: v for k in keys if (v := getattr(self, k)) is not None}


def builtin_vlm_plan(profile: Profile) -> list[PlanStep]:
    """The built-in `vlm` plan when the primary endpoint has `profile`: that profile's own
    ladder on the primary model, then the fallback model, the text layer and Tesseract."""
    textlayer = PlanStep(name="textlayer", engine="textlayer")
    tesseract = PlanStep(name="tesseract", engine="tesseract")
    return [
        *(
            PlanStep(
                name=r.name,
                engine="vlm",
                endpoint="primary",
                temperature=r.temperature,
                top_p=r.top_p,
            )
            for r in profile.plan_ladder()
        ),
        PlanStep(name="fallback-model", engine="vlm", endpoint="fallback", temperature=0.0),
        textlayer,
        tesseract,
    ]


def _primary_profile(data: dict[str, Any]) -> Profile:
    """The primary endpoint's profile; the default profile when there is no primary, or when
    its profile is unknown (that error is reported by the settings' own check)."""
    primary = data.get("vlm_endpoints", {}).get("primary")
    if primary is None:
        return BUILTIN[DEFAULT_PROFILE]
    try:
        return resolve_profile(primary.profile, primary.model, data.get("profiles"))
    except ConfigError:
        return BUILTIN[DEFAULT_PROFILE]


def _default_plans(data: dict[str, Any]) -> dict[str, list[PlanStep]]:
    textlayer = PlanStep(name="textlayer", engine="textlayer")
    tesseract = PlanStep(name="tesseract", engine="tesseract")
    return {
        "auto": [textlayer, tesseract],
        "textlayer": [textlayer],
        "tesseract": [tesseract],
        "vlm": builtin_vlm_plan(_primary_profile(data)),
    }


class PlanFields(BaseModel):
    """Which plan runs, the endpoints and profiles it asks, and how many pages at once."""

    engine: str = Field(default="auto", description="Default attempt plan (a key of `plans`).")
    vlm_endpoints: dict[str, VlmEndpoint] = Field(
        default_factory=default_endpoints,
        description="OpenAI-compatible endpoints that VLM plan steps name.",
    )
    profiles: dict[str, Profile] = Field(
        default_factory=dict,
        description="Your own model profiles (`[profiles.<id>]` in folio.toml), beside and over "
        "the built-in ones; see docs/models.md.",
    )
    # after the endpoints and profiles: the built-in `vlm` plan follows the primary's profile
    plans: dict[str, list[PlanStep]] = Field(
        default_factory=_default_plans,
        description="Attempt plans: ordered engine steps per name. The built-in `vlm` plan runs "
        "the primary endpoint's profile's own retry ladder (`folio models` shows it).",
    )
    concurrency: int = Field(
        default_factory=lambda: os.cpu_count() or 1,
        description="Pages processed at once by the in-process executor.",
    )
    vlm_concurrency: int = Field(
        default=64,
        description="Pages in flight at once in-process when the plan uses a VLM (I/O bound).",
    )
    detector: dict[str, int] = Field(
        default_factory=dict,
        description="Loop detector thresholds to override (field of DetectorConfig -> value).",
    )
    detector_grounding: bool = Field(
        default=True,
        description="Ask the page before a loop verdict cuts a stream: where the page has a "
        "usable text layer (or a scan's reading, `detector_grounding_read`), a unit the page "
        "itself holds as often as the output does, counted by the measure that made the "
        "verdict, is not a loop, and the stream goes on up to the page's count plus "
        "`detector_grounding_margin` copies (docs/loop-stop.md, Grounding). The engine plugin "
        "asks the same page.",
    )
    detector_grounding_margin: int = Field(
        default=2,
        ge=0,
        description="Copies of a unit past the page's own count that a grounded stream may "
        "write before its verdict stands.",
    )
    detector_grounding_read: bool = Field(
        default=True,
        description="Where a page has no usable text layer (a scan), read it at its first loop "
        "verdict with Tesseract in `tesseract_lang` (and RapidOCR where the [scan] extra is "
        "installed), on a worker thread, and ask that reading as grounding asks a text layer. "
        "Where Folio's client-side detector is the stop, the verdict waits for the read while "
        "the stream goes on, up to `detector_grounding_read_hold_chars`; where the engine "
        "plugin ends the request, the verdict cuts and the page's later attempts ask the "
        "reading, in the client and the plugin alike (docs/loop-stop.md, Grounding).",
    )
    detector_grounding_read_hold_chars: int = Field(
        default=384,
        ge=0,
        description="Characters a stream may run on past a verdict while its page is read; "
        "past them the verdict stands unasked (about 110 tokens, 1.7 s of an H100's decode "
        "step at batch 256, past the slowest Tesseract read measured).",
    )
    detector_grounding_read_moved_on_chars: int = Field(
        default=4096,
        ge=0,
        description="Characters a verdict may wait for its page's read in all, past "
        "`detector_grounding_read_hold_chars`, while the stream has moved on from the verdict's "
        "unit (no copy of it in the last two copies' length): a loop writes its unit again "
        "within every period and is cut at the hold; a page read right goes on to its next "
        "rows while a long table is read (4-5 CPU-s).",
    )
    detector_grounding_read_workers: int = Field(
        default=1,
        ge=1,
        description="Threads of a worker that read pages at their verdicts (one Tesseract each).",
    )
    detector_grounding_read_wait_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds an attempt waits at its end, off the event loop, for its page's "
        "read still running (a Tesseract read takes about 1 CPU-second, RapidOCR's second "
        "reading 5-10 times that); past them the read is left unrecorded.",
    )
    detector_online: bool = Field(
        default=True,
        description="Folio's own loop detector reads every VLM stream and its verdict stops "
        "the attempt. Off: the worker never calls a loop while it reads (nor grounds one), so "
        "a loop runs to the server's own stop (repetition_detection, where the endpoint sends "
        "it) or to max_tokens, and only the judge of the whole answer sees it: a pipeline "
        "that relies on the server alone (bench scale's no-stop and server-stop arms).",
    )
