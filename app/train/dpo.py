"""Preference pairs for DPO from what a batch saw: a looping attempt (rejected) and the
healthy answer the retry ladder found for the same page (chosen), or the page's ground truth
where a truth folder has it, in TRL's vision format."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.db import pages
from app.db.engine import Database
from app.db.models import Attempt, Document, Page
from app.degeneration import score_output
from app.evaluate.quality import find_truth
from app.pdf.render import read_text_layer
from app.pdf.textlayer import text_layer_is_usable
from app.profiles import Profile
from app.profiles.answer import write_answer
from app.profiles.request import IMAGE_PLACEHOLDER, messages
from app.settings import Settings
from app.textmatch import word_f1
from app.train.healthy import export_healthy
from app.train.page_image import profile_of, write_page_image


@dataclass(frozen=True)
class ExportOptions:
    include_non_vlm: bool = False
    loop_periods_kept: int = 8
    loop_min_chars_kept: int = 256
    min_chosen_chars: int = 1
    min_textlayer_agreement: float = 0.5
    truth_dir: Path | None = None  # DOC.pN.md (as `folio eval --truth`): chosen where present
    healthy_pages: int = 200  # pages read without looping, for train-dpo's gate (healthy.jsonl)


@dataclass
class ExportSummary:
    pairs: int = 0
    healthy_pages: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class TruthAnswer:
    """A page's ground truth, chosen over any answer the ladder found."""

    text: str


@dataclass(frozen=True)
class PagePair:
    page: Page
    document: Document
    rejected: Attempt
    chosen: Attempt | TruthAnswer


def truncate_rejected(
    output: str, onset: int | None, period: int | None, periods: int, min_chars: int = 0
) -> str:
    """The looping output cut a few periods after the loop starts: enough to learn from.

    Short periods keep at least `min_chars` of the loop, so a two-character loop still reads
    as a loop rather than as a stray symbol.
    """
    if onset is None or not period:
        return output
    return output[: onset + max(periods * period, min_chars)]


def export_preferences(
    settings: Settings, db: Database, job_ids: Sequence[str], out: Path, options: ExportOptions
) -> ExportSummary:
    """Write `out/train.jsonl`, `out/healthy.jsonl` (the gate's pages read without looping) and
    `out/images/`; return what was written and why pages were not."""
    (out / "images").mkdir(parents=True, exist_ok=True)
    summary = ExportSummary()
    seen: set[str] = set()
    with (out / "train.jsonl").open("w", encoding="utf-8") as sink:
        for pair in _candidate_pairs(db, job_ids, summary, options.truth_dir):
            profile = profile_of(settings, pair.rejected.endpoint)
            reason = _rejection_reason(pair, options) or _format_reason(profile, pair.chosen)
            if reason:
                summary.skipped[reason] += 1
                continue
            record = _record(settings, profile, pair, out, options)
            key = hashlib.sha256(
                json.dumps([record["images"], record["chosen"], record["rejected"]]).encode()
            ).hexdigest()
            if key in seen:
                summary.skipped["duplicate pair"] += 1
                continue
            seen.add(key)
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
            summary.pairs += 1
    summary.healthy_pages = export_healthy(
        settings, db, job_ids, out, options.healthy_pages, options.truth_dir
    )
    return summary


def _candidate_pairs(
    db: Database, job_ids: Sequence[str], summary: ExportSummary, truth_dir: Path | None
) -> Iterable[PagePair]:
    with db.session() as session:
        rows = pages.pages_with_documents(session, job_ids)
        for page, document in rows:
            attempts = list(page.attempts)
            rejected = next((a for a in attempts if a.status == "degenerate" and a.output), None)
            if rejected is None:
                continue
            truth = find_truth(truth_dir, document.name, page.number, document.page_count)
            if truth is not None:
                yield PagePair(page, document, rejected, TruthAnswer(truth))
                continue
            chosen = next((a for a in attempts if a.status == "ok" and a.id > rejected.id), None)
            if chosen is None:
                summary.skipped["no healthy answer for a degenerate page"] += 1
                continue
            yield PagePair(page, document, rejected, chosen)


def _rejection_reason(pair: PagePair, options: ExportOptions) -> str | None:
    chosen = pair.chosen
    if isinstance(chosen, TruthAnswer):
        short = len(chosen.text.strip()) < options.min_chosen_chars
        return "ground truth too short" if short else None
    if chosen.engine != "vlm" and not options.include_non_vlm:
        return f"chosen answer came from {chosen.engine} (use --include-non-vlm)"
    text = chosen.output or ""
    if len(text.strip()) < options.min_chosen_chars:
        return "chosen answer too short"
    score = score_output(text, chosen.finish_reason, chosen.completion_tokens, chosen.max_tokens)
    if score.degenerate:
        return "chosen answer is degenerate by the offline definition"
    layer = read_text_layer(Path(pair.document.path), pair.page.number)
    if text_layer_is_usable(layer, 25) and word_f1(text, layer) < options.min_textlayer_agreement:
        return "chosen answer disagrees with the PDF text layer"
    return None


def _chosen_answer(profile: Profile, chosen: Attempt | TruthAnswer) -> str | None:
    """The chosen text as the model would have answered it (its fields where it did)."""
    if isinstance(chosen, TruthAnswer):
        return write_answer(profile, chosen.text, {})
    fields = chosen.answer_fields if chosen.prompt_version == profile.tag else None
    return write_answer(profile, chosen.output or "", fields or {})


def _format_reason(profile: Profile, chosen: Attempt | TruthAnswer) -> str | None:
    if _chosen_answer(profile, chosen) is None:
        return f"chosen answer cannot be written in {profile.response.format}"
    return None


def _record(
    settings: Settings, profile: Profile, pair: PagePair, out: Path, options: ExportOptions
) -> dict[str, Any]:
    image_name = f"{pair.page.job_id}-{pair.page.id}.png"
    image_path = out / "images" / image_name
    if not image_path.exists():
        write_page_image(
            settings,
            profile,
            Path(pair.document.path),
            pair.page.number,
            pair.rejected.endpoint,
            image_path,
        )
    rejected = pair.rejected
    prompt = messages(profile, IMAGE_PLACEHOLDER)
    rejected_text = truncate_rejected(
        rejected.output or "",
        rejected.verdict_onset,
        rejected.verdict_period,
        options.loop_periods_kept,
        options.loop_min_chars_kept,
    )
    return {
        "images": [f"images/{image_name}"],
        "prompt": prompt,
        "chosen": [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": _chosen_answer(profile, pair.chosen)}],
            }
        ],
        "rejected": [{"role": "assistant", "content": [{"type": "text", "text": rejected_text}]}],
        "metadata": _metadata(pair),
    }


def _metadata(pair: PagePair) -> dict[str, Any]:
    rejected = pair.rejected
    return {
        "job_id": pair.page.job_id,
        "page_id": pair.page.id,
        "document": pair.document.name,
        "document_sha256": pair.document.sha256,
        "page": pair.page.number,
        "rejected_model": rejected.model,
        "rejected_params": rejected.params,
        "rejected_verdict": {
            "kind": rejected.verdict_kind,
            "period": rejected.verdict_period,
            "onset": rejected.verdict_onset,
            "aborted": rejected.aborted,
        },
        "prompt_version": rejected.prompt_version,
        "page_read": page_read(rejected),
        **_chosen_metadata(pair.chosen, rejected.prompt_version),
    }


def page_read(attempt: Attempt) -> dict[str, Any] | None:
    """A scan's text as the read at the attempt's verdict found it (grounding, issue 65): what
    the page holds, beside the answers, where it has no text layer."""
    grounding = (attempt.params or {}).get("grounding")
    read = grounding.get("read") if isinstance(grounding, dict) else None
    if not isinstance(read, dict) or not read.get("text"):
        return None
    return {"text": read["text"], "model": read.get("model")}


def _chosen_metadata(chosen: Attempt | TruthAnswer, prompt_version: str | None) -> dict[str, Any]:
    if isinstance(chosen, TruthAnswer):
        return {"chosen_model": None, "chosen_params": None, "chosen_by": "truth",
                "chosen_format": "truth"}  # fmt: skip
    return {
        "chosen_model": chosen.model,
        "chosen_params": chosen.params,
        "chosen_by": f"{chosen.engine}:{chosen.step_name}",
        "chosen_format": "as_answered" if chosen.prompt_version == prompt_version else "rewritten",
    }
