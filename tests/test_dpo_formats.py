"""DPO pairs in the model's own format: the prompt as the profile asks it, the chosen side as
the model answers (olmOCR's front matter around the text, with the chosen attempt's own
fields), the image at the profile's size; invalid answers are never a rejected side."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from PIL import Image
from sqlalchemy import select

from app.db.engine import Database
from app.db.models import Attempt, Page
from app.jobs import JobRequest, create_job
from app.pdf import samples
from app.profiles import BUILTIN
from app.profiles.parsers import parse_answer
from app.settings import PlanStep, Settings, VlmEndpoint
from app.train.dpo import ExportOptions, export_preferences

OLMOCR = BUILTIN["olmocr2"]
LOOP = "Intro. " + "the same words again " * 60
FIELDS = {
    "primary_language": "de",
    "is_rotation_valid": True,
    "rotation_correction": 0,
    "is_table": False,
    "is_diagram": False,
}


def attempt(page: Page, index: int, status: str, output: str, **extra: Any) -> Attempt:
    now = datetime.now(UTC)
    values: dict[str, Any] = {
        "job_id": page.job_id,
        "page_id": page.id,
        "step_index": index,
        "step_name": f"s{index}",
        "engine": "vlm",
        "model": "allenai/olmOCR-2-7B-1025-FP8",
        "endpoint": "primary",
        "params": {},
        "prompt_version": OLMOCR.tag,
        "status": status,
        "started_at": now,
        "ended_at": now,
        "duration_s": 1.0,
        "finish_reason": "stop",
        "output": output,
        "output_chars": len(output),
    }
    return Attempt(**(values | extra))


def job_with_attempts(db_url: str, folder: Path, first_status: str) -> tuple[Settings, str, str]:
    folder.mkdir()
    text = samples.page_text(1)
    (folder / "scan.pdf").write_bytes(samples.scanned_pdf([text]))
    settings = Settings(
        database_url=db_url,
        engine="ladder",
        plans={"ladder": [PlanStep(name="s0", engine="vlm", endpoint="primary")]},
        vlm_endpoints={
            "primary": VlmEndpoint(base_url="http://x/v1", model="allenai/olmOCR-2-7B-1025-FP8")
        },
    )
    db = Database(db_url)
    ingested = create_job(settings, db, JobRequest(folder, None, "ladder"))
    with db.session() as session:
        page = session.scalars(select(Page)).one()
        verdict = {"verdict_kind": "block", "verdict_period": 21, "verdict_onset": 7}
        session.add(attempt(page, 0, first_status, LOOP, **verdict))
        session.add(attempt(page, 1, "ok", text, answer_fields=FIELDS))
        session.commit()
    return settings, ingested.job_id, text


def test_pairs_are_written_as_olmocr_answers(sqlite_url: str, tmp_path: Path) -> None:
    settings, job_id, text = job_with_attempts(sqlite_url, tmp_path / "in", "degenerate")
    out = tmp_path / "out"
    summary = export_preferences(settings, Database(sqlite_url), [job_id], out, ExportOptions())
    assert summary.pairs == 1, summary.skipped
    record = json.loads((out / "train.jsonl").read_text())
    content = record["prompt"][0]["content"]
    assert [part["type"] for part in content] == ["text", "image"]  # olmOCR: text first
    assert content[0]["text"] == OLMOCR.request.prompt
    chosen = record["chosen"][0]["content"][0]["text"]
    assert chosen.startswith("---\nprimary_language: de\n")
    parsed = parse_answer(OLMOCR.response, chosen)
    assert parsed.markdown == text.strip() and parsed.fields == FIELDS
    assert record["metadata"]["chosen_format"] == "as_answered"
    image = Image.open(out / record["images"][0])
    assert max(image.size) == 1288  # rendered at olmOCR's size


def test_an_invalid_answer_is_never_a_rejected_side(sqlite_url: str, tmp_path: Path) -> None:
    settings, job_id, _ = job_with_attempts(sqlite_url, tmp_path / "in", "invalid")
    summary = export_preferences(
        settings, Database(sqlite_url), [job_id], tmp_path / "out", ExportOptions()
    )
    assert summary.pairs == 0
