"""Run every arm on the same pages as its own job, then put the figures side by side."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from app.db.engine import Database
from app.db.pages import lease_owners
from app.errors import ConfigError
from app.evaluate.arms import Arm, settings_with_arms
from app.evaluate.pages import PageSet, select_pages
from app.evaluate.quality import find_truth, page_quality
from app.evaluate.resume import EvalJobs, load_jobs, pages_left
from app.jobs import JobRequest, create_job, release_dead_leases, run_job_locally
from app.jobs.results import JobResults, load_results
from app.pipeline.local import PageCallback
from app.report.build import build_report
from app.report.schema import Report
from app.settings import Settings

ArmCallback = Callable[[Arm, int], None]


@dataclass(frozen=True)
class PageScore:
    document: str
    page: int
    status: str
    step: str | None
    attempts: int
    reference: str
    cer: float | None
    word_f1: float | None
    textlayer_f1: float | None


@dataclass(frozen=True)
class ArmResult:
    label: str
    plan: str
    endpoint: str | None
    job_id: str
    models: list[str]
    pages: int
    pages_failed: int
    attempts: int
    degenerate_attempts: int
    degeneration_rate_first_attempt: float | None
    degeneration_rate_final: float | None
    recovered_by: dict[str, int]
    pages_recovered: int
    cer: float | None
    word_f1: float | None
    textlayer_f1: float | None
    pages_with_truth: int
    pages_with_textlayer: int
    tokens_generated: int
    tokens_per_page: float | None
    engine_seconds: float
    engine_seconds_per_page: float | None
    cost_usd: float
    cost_per_1k_pages: float | None
    inflation_estimate: float | None
    page_scores: list[PageScore] = field(default_factory=list)


@dataclass(frozen=True)
class Evaluation:
    source: str
    pages_file: str | None
    truth_dir: str | None
    arms: list[ArmResult]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EvalRequest:
    source: Path
    arms: Sequence[Arm]
    work: Path
    pages_file: Path | None = None
    truth_dir: Path | None = None


def evaluate(
    settings: Settings,
    db: Database,
    request: EvalRequest,
    on_arm: ArmCallback | None = None,
    on_page: PageCallback | None = None,
) -> Evaluation:
    """Each arm as one job on the same pages; raises ConfigError on unknown plans or pages.
    A rerun into the same `request.work` resumes: each arm reads only its unfinished pages."""
    arm_settings = settings_with_arms(settings, request.arms)
    jobs = load_jobs(request.work, request.source, request.pages_file)
    pages = select_pages(request.source, request.pages_file, request.work)
    results = []
    for arm in request.arms:
        job_id, page_ids = _job_and_pages(arm_settings, db, jobs, arm, pages.source)
        if on_arm:
            on_arm(arm, len(page_ids))
        if page_ids:
            run_job_locally(arm_settings, db, job_id, page_ids, on_page)
        report = build_report(db, arm_settings, job_id).report
        scores = _scores(load_results(db, job_id), pages, request.truth_dir, settings)
        results.append(_arm_result(arm, report, scores))
    return Evaluation(
        str(request.source),
        str(request.pages_file) if request.pages_file else None,
        str(request.truth_dir) if request.truth_dir else None,
        results,
    )


def _job_and_pages(
    settings: Settings, db: Database, jobs: EvalJobs, arm: Arm, source: Path
) -> tuple[str, list[int]]:
    """The arm's job and the pages it has left: a remembered job's unfinished pages, or a
    new job (remembered before any page is read) and all of them."""
    known = jobs.job_of(arm)
    if known:  # a killed run's pages in flight are leased to its dead process: free them
        release_dead_leases(db, known)
        _refuse_held(db, known)
    left = pages_left(db, known) if known else None
    if known and left is not None:
        return known, left
    ingested = create_job(settings, db, JobRequest(source, None, arm.plan_key))
    jobs.remember(arm, ingested.job_id)
    return ingested.job_id, list(ingested.page_ids)


def _refuse_held(db: Database, job_id: str) -> None:
    """Stop where a live process still holds pages of the job (a run that was told to stop and
    has not yet): read beside it, those pages would be reported with no answer."""
    with db.session() as session:
        held = sorted({owner or "" for _, owner in lease_owners(session, job_id)})
    if held:
        raise ConfigError(
            f"job {job_id}: pages are still being read by {', '.join(held)}; wait for that "
            "run to end (or stop it), then run this evaluation again"
        )


def _scores(
    results: JobResults, pages: PageSet, truth_dir: Path | None, settings: Settings
) -> list[PageScore]:
    scores = []
    for document in results.documents:
        for page in document.pages:
            origin = pages.origin(document.name, page.number, document.path, document.page_count)
            truth = find_truth(truth_dir, origin.document, origin.page, origin.pages)
            # A failed page scores as an empty answer (CER 1, F1 0), never as missing:
            # an arm must not look better for giving up on its hardest pages.
            quality = page_quality(
                page.text or "", truth, origin.path, origin.page, settings.textlayer_min_chars
            )
            scores.append(
                PageScore(
                    origin.document,
                    origin.page,
                    page.status,
                    page.step,
                    page.attempts,
                    quality.reference,
                    quality.cer,
                    quality.word_f1,
                    quality.textlayer_f1,
                )
            )
    return scores


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(fmean(present), 4) if present else None


def _per_page(total: float, pages: int) -> float | None:
    return round(total / pages, 4) if pages else None


def _arm_result(arm: Arm, r: Report, scores: list[PageScore]) -> ArmResult:
    models = sorted({m.model or m.engine for m in r.per_model})
    return ArmResult(
        label=arm.label,
        plan=arm.plan,
        endpoint=arm.endpoint,
        job_id=r.job_id,
        models=models,
        pages=r.pages_total,
        pages_failed=r.pages_failed,
        attempts=r.attempts_total,
        degenerate_attempts=r.degenerate_attempts,
        degeneration_rate_first_attempt=r.degeneration_rate_first_attempt,
        degeneration_rate_final=r.degeneration_rate_final,
        recovered_by=r.recovered_by,
        pages_recovered=sum(r.recovered_by.values()),
        cer=_mean([s.cer for s in scores]),
        word_f1=_mean([s.word_f1 for s in scores]),
        textlayer_f1=_mean([s.textlayer_f1 for s in scores]),
        pages_with_truth=sum(1 for s in scores if s.reference == "truth"),
        pages_with_textlayer=sum(1 for s in scores if s.reference == "textlayer"),
        tokens_generated=r.tokens_generated,
        tokens_per_page=_per_page(r.tokens_generated, r.pages_total),
        engine_seconds=r.engine_seconds,
        engine_seconds_per_page=_per_page(r.engine_seconds, r.pages_total),
        cost_usd=r.cost_usd,
        cost_per_1k_pages=r.cost_per_1k_pages,
        inflation_estimate=r.inflation_estimate,
        page_scores=scores,
    )
