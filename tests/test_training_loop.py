"""The product's loop on the real vLLM CPU server, without ground truth: a job whose first
attempts loop and whose retry ladder recovers them, its pairs exported (the chosen side from
the ladder), a few DPO steps with a held-out split.

It asserts the mechanics, not that a random tiny model got better: it does not
(shared/notes/dpo-on-cpu.md). Serving a tuned folder and `folio eval` of base against tuned,
each arm counted from its own model's attempts, are asserted in `test_flywheel_smoke.py` on
the flywheel bench's DPO arm (one vLLM start for both).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.db.engine import Database
from app.jobs import JobRequest, create_job, run_job_locally
from app.pdf import samples
from app.report.load import load_job_rows
from app.settings import PlanStep, Settings, VlmEndpoint
from app.train.dpo import ExportOptions, export_preferences
from tests.test_train_dpo import train_extra_or_skip
from tests.vllm_cpu.profiles import TINY_PROFILE, TINY_PROFILES
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint, default_model_dir

PAGES = 5
STEPS = 4  # mechanics only: the card counts them
GATE_TOKENS = 64  # the tiny model loops within a few dozen tokens; the gate stops it there
LADDER = [
    PlanStep(name="greedy", engine="vlm", endpoint="primary", temperature=0.0, max_tokens=600),
    PlanStep(
        name="penalized",
        engine="vlm",
        endpoint="primary",
        temperature=0.8,
        repetition_penalty=1.3,
        seed=11,
        max_tokens=80,
    ),
    PlanStep(name="tesseract", engine="tesseract"),
]


class PhaseClock:
    def __init__(self) -> None:
        self.last, self.seconds = time.monotonic(), {}

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name], self.last = round(now - self.last, 1), now

    def __repr__(self) -> str:
        return f"phases (s): {self.seconds}, load {os.getloadavg()[0]:.1f}"


def endpoint(url: str, model: str) -> VlmEndpoint:
    return VlmEndpoint(
        base_url=url, model=model, transport_retry_s=5, max_tokens=600, profile=TINY_PROFILE.id
    )


def settings_for(db_url: str, endpoints: dict[str, VlmEndpoint]) -> Settings:
    return Settings(
        database_url=db_url,
        engine="ladder",
        plans={"ladder": LADDER},
        vlm_endpoints=endpoints,
        vlm_concurrency=4,
        profiles=TINY_PROFILES,
    )


def train(pairs: Path, out: Path) -> None:
    command = [
        *(sys.executable, "-c", "from app.cli.main import main; main()"),
        *("train-dpo", str(pairs), "--base-model", str(default_model_dir()), "--out", str(out)),
        *("--max-steps", str(STEPS), "--batch-size", "4", "--learning-rate", "5e-4"),
        *("--held-out", "0.2", "--device", "cpu", "--gate-max-tokens", str(GATE_TOKENS)),
    ]
    # One thread: on a busy 2-core machine a second torch thread only spins.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.vllm
@pytest.mark.slow
def test_a_job_s_loops_become_pairs_and_train(vllm_endpoint: VllmEndpoint, tmp_path: Path) -> None:
    train_extra_or_skip()
    phases = PhaseClock()
    folder = tmp_path / "in"
    folder.mkdir()
    texts = [samples.page_text(n, paragraphs=1) for n in range(1, PAGES + 1)]
    (folder / "scans.pdf").write_bytes(samples.scanned_pdf(texts))
    db_url = f"sqlite:///{tmp_path / 'folio.db'}"
    db = Database(db_url)
    base = endpoint(vllm_endpoint.base_url, SERVED_MODEL_NAME)
    settings = settings_for(db_url, {"primary": base})

    ingested = create_job(settings, db, JobRequest(folder, None, "ladder"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    summary = export_preferences(
        settings, db, [ingested.job_id], tmp_path / "pairs", ExportOptions()
    )
    assert summary.pairs == PAGES, summary.skipped
    phases.mark("job + export")

    tuned = tmp_path / "tuned"
    train(tmp_path / "pairs", tuned)
    phases.mark("train-dpo")
    print(phases)  # seconds per phase, shown with -s or on failure
    card = json.loads((tuned / "training_card.json").read_text())
    held = json.loads((tuned / "held_out_pages.json").read_text())
    assert card["steps"] == STEPS and card["pairs"]["train"] == PAGES - len(held) and len(held) == 1
    assert "truth" not in card["pairs"]["by_chosen_source"], "the chosen side is the ladder's"
    for name in ("config.json", "model.safetensors", "preprocessor_config.json"):
        assert (tuned / name).is_file(), f"the tuned folder is laid out as the base was: {name}"
    gate = json.loads((tuned / "gate_verdict.json").read_text())
    assert gate["reading"]["pages_by_origin"] == {"looped": 1}, "no healthy page in this job"
    (page,) = gate["pages"]
    assert page["base"]["looped"], "read in-process, the base loops on the page it looped on"
    assert gate["base"]["loops"] == 1 and card["gate"]["decision"] == gate["decision"]
    firsts = first_attempts(db, ingested.job_id)
    assert len(firsts) == PAGES and all(a.status == "degenerate" for a in firsts), (
        "greedy on the base loops"
    )


def first_attempts(db: Database, job_id: str) -> list[Any]:
    rows = load_job_rows(db, job_id)
    return [
        min((a for a in rows.attempts if a.page_id == p.id), key=lambda a: a.id) for p in rows.pages
    ]
