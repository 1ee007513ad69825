"""What one document and one page may take: file and page caps, attempts, tokens, the repeat
and confirmation rules on loops, and the price of CPU work."""

from __future__ import annotations

from pydantic import BaseModel, Field


class LimitFields(BaseModel):
    """Caps on a document and on a page's attempts, and what CPU work costs."""

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
        "itself), run that step once more with a relaxed stop that lets the repeated unit, "
        "and only it, run up to a bound: an answer that ends before max_tokens and passes "
        "the profile's judge and the offline scorer (that unit tolerated up to the bound) is "
        "kept and the stops count as false alarms; a real loop is cut past the bound, or ends "
        "as degeneration, and the page goes on down its plan.",
    )
    page_token_budget: int = Field(
        default=32_000, description="Completion tokens one page may spend across its attempts."
    )
    page_time_budget_s: float | None = Field(
        default=1800.0,
        gt=0,
        description="Seconds one page may take from its claim to its last attempt; past it the "
        "page stops at its next check (each streamed chunk, each attempt, each stage of the "
        "text-layer gate) and fails alone as page_time_budget. Unset: no budget. The default "
        "is the page's token budget (32,000) at 20 tokens a second, a loaded server's pace, "
        "with 200 s to spare.",
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
