"""A small job with a known timeline, as plain rows and as database rows.

Seconds after T0 (two lanes of GPU work, one token-priced API call, one Tesseract call):

    a p1  A1 greedy     gpu  degenerate [0, 10]   100 prompt, 3000 generated, cap 4000, aborted
    a p1  A2 penalized  gpu  ok         [10, 12]  100 / 200
    a p2  A3 greedy     gpu  ok         [0, 4]    100 / 400
    b p1  A4 greedy     gpu  ok         [4, 8]    100 / 200
    b p2  A5 tesseract  cpu  ok         [12, 14]
    c p1  A6 greedy     api  degenerate [1, 3]    1000 / 500, cap 500, not aborted
    d     (no pages: the PDF was encrypted)

Prices: gpu 2 GPUs at $3.60/h ($0.002/s); api $1/M prompt, $2/M output; CPU $0.36/h.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from app.db.engine import Database
from app.db.models import Attempt, Document, Job, Page
from app.report.pricing import EndpointPrice, Pricing
from app.report.rows import AttemptRow, DocumentRow, JobRows, PageRow
from app.settings import Settings, VlmEndpoint

T0 = datetime(2026, 1, 5, 10, 0, 0, tzinfo=UTC)
LOOP = "<b>loop</b> & " * 100

DOCUMENTS = [("a", "done"), ("b", "done"), ("c", "failed"), ("d", "failed")]
PAGES = [  # document, number, status, final step, failure category
    ("a", 1, "fallback", "penalized", None),
    ("a", 2, "succeeded", "greedy", None),
    ("b", 1, "succeeded", "greedy", None),
    ("b", 2, "succeeded", "tesseract", None),
    ("c", 1, "failed", None, "degenerate"),
]


@dataclass(frozen=True)
class Spec:
    page: tuple[str, int]
    step: str
    engine: str
    model: str
    endpoint: str | None
    status: str
    start: float
    end: float
    prompt: int | None = None
    completion: int | None = None
    max_tokens: int | None = None
    aborted: bool = False
    output: str = "text"


ATTEMPTS = [
    Spec(
        ("a", 1), "greedy", "vlm", "m-gpu", "gpu", "degenerate", 0, 10, 100, 3000, 4000, True, LOOP
    ),
    Spec(("a", 1), "penalized", "vlm", "m-gpu", "gpu", "ok", 10, 12, 100, 200, 4000),
    Spec(("a", 2), "greedy", "vlm", "m-gpu", "gpu", "ok", 0, 4, 100, 400, 4000),
    Spec(("b", 1), "greedy", "vlm", "m-gpu", "gpu", "ok", 4, 8, 100, 200, 4000),
    Spec(("b", 2), "tesseract", "tesseract", "tesseract-5:eng", None, "ok", 12, 14),
    Spec(
        ("c", 1), "greedy", "vlm", "m-api", "api", "degenerate", 1, 3, 1000, 500, 500, False, LOOP
    ),
]

PRICING = Pricing(
    {
        "gpu": EndpointPrice(usd_per_gpu_hour=3.6, gpus=2),
        "api": EndpointPrice(usd_per_m_input=1.0, usd_per_m_output=2.0),
    },
    cpu_usd_per_hour=0.36,
)


def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        cpu_usd_per_hour=0.36,
        vlm_endpoints={
            "gpu": VlmEndpoint(
                base_url="http://gpu/v1", model="m-gpu", usd_per_gpu_hour=3.6, gpus=2
            ),
            "api": VlmEndpoint(
                base_url="http://api/v1", model="m-api", usd_per_m_input=1.0, usd_per_m_output=2.0
            ),
        },
    )


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _common(page_id: int, s: Spec) -> dict[str, Any]:
    """The fields an attempt row and an attempt record of the scenario share."""
    degenerate = s.status == "degenerate"
    return {
        "page_id": page_id,
        "step_name": s.step,
        "engine": s.engine,
        "model": s.model,
        "endpoint": s.endpoint,
        "status": s.status,
        "started_at": at(s.start),
        "ended_at": at(s.end),
        "duration_s": float(s.end - s.start),
        "prompt_tokens": s.prompt,
        "completion_tokens": s.completion,
        "max_tokens": s.max_tokens,
        "aborted": s.aborted,
        "verdict_kind": "line" if degenerate else None,
        "verdict_period": 14 if degenerate else None,
    }


def attempt_row(i: int, page_id: int, s: Spec) -> AttemptRow:
    tail = s.output if s.status == "degenerate" else None
    return AttemptRow(id=i, output_tail=tail, **_common(page_id, s))


def scenario_rows() -> JobRows:
    page_ids = {(d, n): i for i, (d, n, *_) in enumerate(PAGES, start=1)}
    return JobRows(
        job_id="job1",
        plan="vlm",
        status="done",
        started_at=at(-1),
        finished_at=at(15),
        documents=[DocumentRow(*d) for d in DOCUMENTS],
        pages=[PageRow(page_ids[(d, n)], d, n, st, fs, fc) for d, n, st, fs, fc in PAGES],
        attempts=[attempt_row(i, page_ids[s.page], s) for i, s in enumerate(ATTEMPTS, 1)],
    )


def insert_job(db: Database, attempts: list[Spec] = ATTEMPTS, with_pages: bool = True) -> str:
    """The scenario (or just `attempts`, on pages of their own) as rows of a new job."""
    with db.session() as session:
        job = Job(
            status="done", source="/in", plan_name="vlm", started_at=at(-1), finished_at=at(15)
        )
        session.add(job)
        session.flush()
        docs = {}
        for name, status in DOCUMENTS if with_pages else [("x", "done")]:
            docs[name] = Document(job_id=job.id, path=f"/in/{name}.pdf", name=name, status=status)
        session.add_all(docs.values())
        session.flush()
        page_specs = (
            PAGES
            if with_pages
            else [("x", n, "succeeded", "greedy", None) for n in range(1, len(attempts) + 1)]
        )
        pages = {}
        for d, n, status, final_step, category in page_specs:
            pages[(d, n)] = Page(
                job_id=job.id,
                document_id=docs[d].id,
                number=n,
                status=status,
                final_step=final_step,
                failure_category=category,
            )
        session.add_all(pages.values())
        session.flush()
        for k, s in enumerate(attempts, start=1):
            page = pages[s.page] if with_pages else pages[("x", k)]
            session.add(_attempt(job.id, page.id, s))
            session.flush()
        return job.id


def _attempt(job_id: str, page_id: int, s: Spec) -> Attempt:
    return Attempt(
        job_id=job_id,
        step_index=0,
        output=s.output,
        output_chars=len(s.output),
        **_common(page_id, s),
    )


# Hand-computed figures of the scenario.
# GPU sweep on `gpu` ($0.002/s); token rates A1 300/s, A2 100/s, A3 100/s, A4 50/s:
#   [0,4]  A1+A3: $0.008 split 3:1        -> A1 0.006,        A3 0.002
#   [4,8]  A1+A4: $0.008 split 300:50     -> A1 0.048/7,      A4 0.008/7
#   [8,10] A1 alone: $0.004; [10,12] A2 alone: $0.004
A1 = 0.006 + 0.048 / 7 + 0.004
A6 = 1000 * 1 / 1e6 + 500 * 2 / 1e6  # token-priced
A5 = 2 * 0.36 / 3600  # CPU
COST = 12 * 0.002 + A6 + A5  # the GPU was busy 12 s
# Inflation: the same sweep in seconds gives A1 3 + 24/7 + 2 = 59/7 of the gpu's 12 busy s;
# its page was retried healthily (A2), so the gpu's counterfactual is 12 - 59/7 = 25/7 s. On
# `api` A6's page has no healthy attempt: its 2 s go, a mean healthy page comes back (from the
# other resources, under 25/7). Busiest 12 s -> 25/7 s: counterfactual wall 14 - 59/7 = 39/7.
EXPECTED = {
    "job_id": "job1",
    "documents_total": 4,
    "documents_failed": 2,
    "pages_total": 5,
    "pages_succeeded": 3,
    "pages_fallback": 1,
    "pages_failed": 1,
    "pages_open": 0,
    "attempts_total": 6,
    "degenerate_attempts": 2,
    "invalid_attempts": 0,
    "attempts_unpriced": 0,
    "degeneration_rate_first_attempt": 2 / 5,
    "degeneration_rate_final": 1 / 5,
    "recovered_by": {"penalized": 1},
    "tokens_prompt": 1400,
    "tokens_generated": 4300,
    "tokens_degenerate": 3500,
    "tokens_saved_by_abort": 1000,
    "engine_seconds": 24.0,
    "engine_seconds_degenerate": 12.0,
    "wall_seconds": 14.0,
    "job_seconds": 16.0,
    "degeneration_share_of_engine_time": 0.5,
    "counterfactual_wall_seconds": 39 / 7,
    "inflation_estimate": 14 / (39 / 7) - 1,
    "inflation_unknown_reason": None,
    "healthy_slowdown_with_concurrent_degenerate": 4 / 2,
    "cost_usd": COST,
    "cost_usd_degenerate": A1 + A6,
    "cost_usd_saved_by_abort_estimate": 1000 * A1 / 3000,
    "cost_per_1k_pages": 1000 * COST / 5,
}
