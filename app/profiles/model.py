"""A model profile as data: how to ask a model, how to size its image, how to read its answer.

Loadable from TOML (`[profiles.<id>]` in folio.toml) as well as built in; every field is
plain data, so a user adds a model without code.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ProfileStatus = Literal["official", "community", "experimental", "approximation", "generic"]
AnswerFormat = Literal[
    "markdown",
    "yaml_front_matter",
    "json_keys",
    "dots_layout_json",
    "deepseek_grounding",
    "html_blocks",
    "doctags",
]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Data):
    """Where a fact of a profile comes from: a file of a public repository at a commit."""

    repo: str = Field(description="owner/name of the repository.")
    path: str = Field(description="File inside the repository, with lines where useful.")
    commit: str = Field(description="Commit (or 'secondary: ...' for a third-party copy).")

    def __str__(self) -> str:
        return f"{self.repo}@{self.commit[:8]}:{self.path}"


class Sampling(_Data):
    """Decoding fields, every one sent explicitly (never left to a server's defaults)."""

    temperature: float = Field(default=0.0, description="Sampling temperature.")
    top_p: float = Field(default=1.0, description="Nucleus sampling mass.")
    top_k: int | None = Field(default=None, description="Top-k; unset is not sent (OpenAI APIs).")
    repetition_penalty: float = Field(default=1.0, description="vLLM repetition penalty.")
    presence_penalty: float = Field(default=0.0, description="OpenAI presence penalty.")
    frequency_penalty: float = Field(default=0.0, description="OpenAI frequency penalty.")


class RequestShape(_Data):
    """The chat request the model was trained on."""

    system: str | None = Field(default=None, description="System turn; none when unset.")
    prompt: str | None = Field(description="User text; none sends the image alone.")
    text_prefix: str = Field(default="", description="Text put before the prompt (dots.ocr).")
    order: Literal["image_first", "text_first"] = Field(
        default="image_first", description="Order of the image and the text in the user turn."
    )
    image_format: Literal["png", "jpeg"] = Field(default="png", description="Image encoding.")
    max_tokens: int = Field(gt=0, description="Completion token cap.")
    sampling: Sampling = Field(default_factory=Sampling, description="Decoding fields.")
    stop: list[str] = Field(default_factory=list, description="Stop strings.")
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="More request fields (skip_special_tokens, mm_processor_kwargs, ...).",
    )
    vllm_xargs: dict[str, Any] = Field(
        default_factory=dict,
        description="The model's own server-side arguments, merged with Folio's (a clash is "
        "a config error).",
    )


class ImageRule(_Data):
    """How big the page image is: rendered at the size the model was trained on."""

    rule: Literal["longest", "shortest", "pixels", "dpi"] = Field(
        description="longest/shortest side in px, a pixel budget, or a render DPI."
    )
    value: int = Field(gt=0, description="Pixels (side or budget) or DPI, by rule.")
    factor: int | None = Field(
        default=None, description="Grid of the pixel rule (Qwen's smart_resize: 28 or 32)."
    )
    min_pixels: int | None = Field(default=None, description="Smallest pixel count (grid rule).")
    render_dpi: int | None = Field(
        default=None, description="Pixel rule: render at least this DPI before fitting."
    )
    min_short_side: int | None = Field(
        default=None, description="Pixel rule: render so the short side is at least this."
    )
    max_side_fallback: int | None = Field(
        default=None,
        description="DPI rule: a side over this many pixels re-renders at 72 DPI (dots.ocr).",
    )


class BoxFrame(_Data):
    """What the numbers of the answer's boxes count: a 0..scale grid over the image sent
    (DeepSeek 999, DocTags 500, Chandra 1024), or pixels of the image as the server resized
    it (Qwen's smart_resize grid: dots.ocr), or, with neither, pixels of the image sent."""

    scale: int | None = Field(
        default=None, gt=0, description="Boxes normalised 0..scale over the image sent."
    )
    factor: int | None = Field(
        default=None, gt=0, description="Pixel boxes on the server's smart_resize grid (28)."
    )
    min_pixels: int = Field(default=3136, gt=0, description="That resize's smallest pixel count.")
    max_pixels: int = Field(
        default=11289600, gt=0, description="That resize's largest pixel count."
    )


class ResponseRule(_Data):
    """How to read the answer, and what makes it valid."""

    format: AnswerFormat = Field(description="The answer's format; picks the parser.")
    drop_furniture: bool = Field(
        default=True,
        description="Drop page headers/footers where the official pipeline drops them.",
    )
    require_finish_stop: bool = Field(
        default=True, description="An answer the server cut off (finish_reason length) is invalid."
    )
    require_end_text: str | None = Field(
        default=None, description="Text a complete answer ends with (DeepSeek's EOS)."
    )
    json_keys: list[str] = Field(
        default_factory=list, description="json_keys format: the keys joined into the page text."
    )
    text_key: str = Field(default="text", description="json_keys format: the body's key.")
    rotation_feedback: bool = Field(
        default=False,
        description="The answer says whether the page is upright (olmOCR's is_rotation_valid, "
        "rotation_correction): a page it calls rotated is asked again, turned.",
    )
    boxes: BoxFrame | None = Field(
        default=None,
        description="The units of the boxes the answer places blocks with (positions); none "
        "when the format gives no boxes or Folio does not read them.",
    )


class LadderStep(_Data):
    """One rung of the profile's own retry ladder (sampling overrides)."""

    name: str = Field(description="Step label.")
    temperature: float | None = Field(default=None, description="Sampling temperature.")
    top_p: float | None = Field(default=None, description="Nucleus sampling mass.")


# Folio retries a loop under altered decoding whatever the model's own pipeline does: one rung,
# 0.2 above the profile's own temperature (0.2 from greedy: olmOCR's second rung, the one
# published OCR temperature ladder read here).
GENERIC_RETRY_STEP = 0.2


class Profile(_Data):
    """Everything Folio needs to serve one OCR model the way it was trained."""

    id: str = Field(description="Name used in settings (`vlm_endpoints.*.profile`).")
    version: str = Field(description="Version, recorded on every attempt as id@version.")
    status: ProfileStatus = Field(description="How far the profile is confirmed by its sources.")
    models: list[str] = Field(
        default_factory=list,
        description="Model names (globs allowed) the profile is for; the first is served.",
    )
    sources: dict[str, Source] = Field(
        default_factory=dict, description="Provenance per fact (prompt, image, sampling, ...)."
    )
    note: str = Field(default="", description="What a user should know (approximations).")
    request: RequestShape = Field(description="The chat request.")
    image: ImageRule = Field(description="The image size rule.")
    response: ResponseRule = Field(description="How the answer is read and judged.")
    ladder: list[LadderStep] = Field(
        default_factory=list, description="The official retry ladder, as plan steps."
    )
    plan_rungs: list[int] = Field(
        default_factory=list,
        description="The rungs of `ladder` (0-based, in order) that the built-in `vlm` plan "
        "runs on an endpoint with this profile; every rung when empty. Without a ladder the "
        "plan runs one attempt at the profile's own sampling, then one retry 0.2 warmer.",
    )
    serve_flags: list[str] = Field(
        default_factory=list, description="`vllm serve` flags the model needs."
    )
    probes: list[Literal["ngram_processor"]] = Field(
        default_factory=list, description="Server requirements `folio doctor` checks."
    )
    detector: dict[str, int] = Field(
        default_factory=dict,
        description="Loop detector thresholds for this format (DetectorConfig field -> value).",
    )

    @property
    def tag(self) -> str:
        """The name recorded on attempts."""
        return f"{self.id}@{self.version}"

    @model_validator(mode="after")
    def _plan_rungs_are_rungs(self) -> Profile:
        outside = [i for i in self.plan_rungs if not 0 <= i < len(self.ladder)]
        if outside:
            raise ValueError(f"plan_rungs {outside}: the ladder has {len(self.ladder)} rungs")
        return self

    def plan_ladder(self) -> list[LadderStep]:
        """The VLM rungs of the built-in `vlm` plan on an endpoint with this profile: the
        chosen rungs of its own ladder; when its model's pipeline brings none, an attempt at the
        profile's own sampling, then Folio's one retry under altered decoding
        (GENERIC_RETRY_STEP)."""
        if not self.ladder:
            own = self.request.sampling.temperature or 0.0
            retry = LadderStep(name="retry", temperature=round(own + GENERIC_RETRY_STEP, 2))
            return [LadderStep(name="first"), retry]
        return [self.ladder[i] for i in self.plan_rungs] if self.plan_rungs else list(self.ladder)
