"""Pages a batch read without looping, exported beside the pairs for the promotion gate.

DPO trains on pages that looped; a tuned model's worst failure is to start looping on pages
that never did. `export-dpo` therefore also writes `healthy.jsonl`: pages whose first attempt
was a healthy VLM answer, with that answer (or the page's ground truth) as the accepted one.
They are never trained on; `train-dpo`'s gate reads them with the base and the tuned model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from app.db import pages
from app.db.engine import Database
from app.db.models import Attempt, Document, Page
from app.evaluate.quality import find_truth
from app.profiles.answer import write_answer
from app.profiles.request import IMAGE_PLACEHOLDER, messages
from app.settings import Settings
from app.train.page_image import profile_of, write_page_image

HEALTHY_FILE = "healthy.jsonl"


def export_healthy(
    settings: Settings,
    db: Database,
    job_ids: Sequence[str],
    out: Path,
    limit: int,
    truth_dir: Path | None = None,
) -> int:
    """Write up to `limit` healthy pages to `out/healthy.jsonl` (images in `out/images/`)."""
    written = 0
    with (out / HEALTHY_FILE).open("w", encoding="utf-8") as sink:
        for page, document, first in _healthy_pages(db, job_ids, limit):
            profile = profile_of(settings, first.endpoint)
            truth = find_truth(truth_dir, document.name, page.number, document.page_count)
            if truth is not None:
                answer = write_answer(profile, truth, {})
            else:
                fields = first.answer_fields if first.prompt_version == profile.tag else None
                answer = write_answer(profile, first.output or "", fields or {})
            if not answer or not answer.strip():
                continue
            image_name = f"{page.job_id}-{page.id}.png"
            image = out / "images" / image_name
            if not image.exists():
                pdf = Path(document.path)
                write_page_image(settings, profile, pdf, page.number, first.endpoint, image)
            record = _record(page, document, first, f"images/{image_name}", answer, truth)
            record["prompt"] = messages(profile, IMAGE_PLACEHOLDER)
            _write(sink, record)
            written += 1
    return written


def _healthy_pages(
    db: Database, job_ids: Sequence[str], limit: int
) -> Iterable[tuple[Page, Document, Attempt]]:
    with db.session() as session:
        rows = pages.pages_with_documents(session, job_ids)
        taken = 0
        for page, document in rows:
            attempts = list(page.attempts)
            first = attempts[0] if attempts else None
            if first is None or first.engine != "vlm" or first.status != "ok" or not first.output:
                continue
            if taken >= limit:
                return
            taken += 1
            yield page, document, first


def _record(
    page: Page, document: Document, first: Attempt, image: str, answer: str, truth: str | None
) -> dict[str, Any]:
    return {
        "images": [image],
        "answer": answer,
        "metadata": {
            "job_id": page.job_id,
            "page_id": page.id,
            "document": document.name,
            "document_sha256": document.sha256,
            "page": page.number,
            "model": first.model,
            "answer_by": "truth" if truth is not None else f"{first.engine}:{first.step_name}",
        },
    }


def _write(sink: TextIO, record: dict[str, Any]) -> None:
    sink.write(json.dumps(record, ensure_ascii=False) + "\n")
