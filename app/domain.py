"""Plain values passed between the pipeline's layers (no ORM, HTTP or PyMuPDF objects)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from PIL import Image

from app.positions.model import PageGeometry


class PageStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FALLBACK = "fallback"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (PageStatus.SUCCEEDED, PageStatus.FALLBACK, PageStatus.FAILED)


TERMINAL_PAGE_STATUSES = tuple(s.value for s in PageStatus if s.terminal)
OPEN_PAGE_STATUSES = tuple(s.value for s in PageStatus if not s.terminal)


class Outcome(StrEnum):
    """What a client does with a page: use it (ok, fallback), or look at why it has no text."""

    PENDING = "pending"
    RUNNING = "running"
    OK = "ok"  # the plan's first attempt answered
    FALLBACK = "fallback"  # a later step answered (often after a loop)
    DEGENERATE = "degenerate"  # no answer: every attempt that ran looped or was cut off
    FAILED = "failed"  # no answer for another reason (failure_category says which)


# Failures that may not come again on a new try: the page itself is not the cause.
# The attempt param that carries the server tokens Folio's close-liveness probe cost, on the
# attempt whose engine call ran it (app/engines/vlm_close_probe.py): the report counts them
# apart from the tokens no attempt received.
CLOSE_PROBE_TOKENS = "loop_stop_close_tokens"
# An attempt's params key: loop verdicts the page's own text overruled (grounding).
GROUNDING_OVERRULED = "grounding_overruled"
# ... and the CPU milliseconds a read of the page at a verdict took (a scan, issue 65).
VERDICT_READ_CPU_MS = "verdict_read_cpu_ms"
RETRYABLE_CATEGORIES = frozenset({"transport", "internal", "busy", "cancelled", "broker"})


def page_outcome(status: str, failure_category: str | None) -> tuple[Outcome, bool | None]:
    """A page's outcome and, for a page without text, whether trying it again may help."""
    if status in (PageStatus.PENDING, PageStatus.RUNNING):
        return Outcome(status), None
    if status == PageStatus.SUCCEEDED:
        return Outcome.OK, None
    if status == PageStatus.FALLBACK:
        return Outcome.FALLBACK, None
    if failure_category == "degenerate":
        return Outcome.DEGENERATE, False
    return Outcome.FAILED, failure_category in RETRYABLE_CATEGORIES


class DocumentStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    PARTIAL = "partial"
    FAILED = "failed"
    SKIPPED = "skipped"


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    # Every page ended, but the results could not be sent where the job asked (see
    # app/jobs/delivery.py); tried again when the server starts.
    UNDELIVERED = "undelivered"


class Executor(StrEnum):
    """What runs a job's pages, recorded in `Job.options["executor"]` when the job starts
    running: Celery workers through the broker, or threads of the process that started it."""

    CELERY = "celery"
    LOCAL = "local"


class AttemptStatus(StrEnum):
    OK = "ok"
    DEGENERATE = "degenerate"
    INVALID = "invalid"  # cut off, incomplete or unreadable in the model's format: retried
    EMPTY = "empty"
    ERROR = "error"
    TRANSPORT_ERROR = "transport_error"
    REJECTED = "rejected"  # the PDF's text layer failed the quality gate
    # A loop verdict that a confirming attempt showed wrong: the page's answer was kept.
    FALSE_ALARM = "false_alarm"


class AttemptRole(StrEnum):
    """Why an attempt ran, beside its plan step (none: the plan's own step)."""

    CONFIRM = "confirm"  # the step again, loop stop off, after a stop repeated on the page


@dataclass(frozen=True)
class ConfirmedUnit:
    """What a confirming attempt is run to settle: the unit a verdict cut twice at the same
    place, as the cut text holds it. The attempt may repeat that unit, and only that one, up
    to a bound (`app.engines.vlm_confirm`): what the page's own text holds, where known."""

    kind: str
    unit: str  # one raw copy, as the cut text wrote it
    cut_text: str  # the text the verdict had cut, for the copies it held then
    onset: int  # where the loop started in `cut_text`
    page_holds: int | None = None  # copies the page's own text holds (grounding), if known


@dataclass(frozen=True)
class PageInput:
    """What an engine gets: the rendered page and the PDF's own text for it.

    `raster` is the page at Folio's DPI, or what renders it when an engine first asks for
    `image` (it must render once however often it is called): a page a model reads at its own
    size never needs it, and rasterising is most of a page's CPU in Folio.
    """

    raster: Image.Image | Callable[[], Image.Image]
    text_layer: str
    text_layer_usable: bool
    text_layer_markdown: str | None = None  # the layer as structured Markdown
    text_layer_rejection: str | None = None  # why the gate refused the layer ("garbled")
    # Whether the page's job was cancelled: a streaming engine asks at each chunk and stops
    # its request the way it stops a loop.
    should_stop: Callable[[], bool] = field(default=lambda: False, compare=False, repr=False)
    geometry: PageGeometry | None = None  # the page's size in points and pixels
    text_layer_words: tuple[tuple[float, float, float, float, str, int], ...] = ()
    # The page's size in PDF points and a way to rasterise it again at a given DPI, so a
    # model gets its page rendered at the size it was trained on (not shrunk from another).
    points: tuple[float, float] | None = None
    render_at: Callable[[float], Image.Image] | None = None
    rotation: int = 0  # degrees a model asked the page to be turned by (olmOCR's feedback)
    pixels: tuple[int, int] | None = None  # `image`'s size, known without rendering it
    # Set on a confirming attempt's page: the unit it may repeat, and how far.
    confirming: ConfirmedUnit | None = None
    # Set on a retry that resumes past a loop: the text before the loop, which the model
    # continues (the answer is this plus what it writes).
    resume_from: str | None = None
    # A scan's text as an earlier attempt's read at its verdict found it (grounding asks it
    # where the page has no usable text layer; `app.engines.verdict_read`).
    page_read: str | None = None

    @property
    def image(self) -> Image.Image:
        return self.raster if isinstance(self.raster, Image.Image) else self.raster()

    @property
    def size(self) -> tuple[int, int]:
        return self.pixels or self.image.size


@dataclass(frozen=True)
class Verdict:
    """A degeneration verdict as stored on an attempt."""

    kind: str
    period: int
    onset: int
    repeats: int = 0
    covered: int = 0


@dataclass
class EngineResult:
    """One engine call's outcome, with everything an attempt row records."""

    text: str
    status: AttemptStatus
    started_at: datetime
    ended_at: datetime
    model: str | None = None
    endpoint: str | None = None
    params: dict[str, object] = field(default_factory=dict)
    prompt_version: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tokens_estimated: bool = False
    max_tokens: int | None = None
    ttft_s: float | None = None
    verdict: Verdict | None = None
    aborted: bool = False
    error: str | None = None
    # Why an answer was refused (status INVALID): truncated, unparseable, missing end text.
    invalid_reason: str | None = None
    # Structured fields of a valid answer beside its Markdown (olmOCR's front matter...).
    answer_fields: dict[str, object] = field(default_factory=dict)
    # Which stop ended the attempt (engine_plugin, abort_call, server_repetition,
    # client_close, none) and the tokens the server generated after Folio's verdict
    # (None, with the reason in the note, where the server does not tell).
    stop_mechanism: str | None = None
    tokens_after_verdict: int | None = None
    tokens_after_verdict_note: str | None = None
    # Word and line boxes (`app.positions`), where the engine gives them.
    positions: dict[str, Any] | None = None
    role: AttemptRole | None = None  # set by the pipeline (a confirming attempt)

    @property
    def duration_s(self) -> float:
        return (self.ended_at - self.started_at).total_seconds()
