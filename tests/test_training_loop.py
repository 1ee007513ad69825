"""The whole loop on the real vLLM CPU server: a job whose first attempts loop, its pairs
exported, a few dozen DPO steps, the tuned folder served by the same harness, and `folio eval`
of base against tuned on the held-out pages.

It asserts the mechanics and the arithmetic (each arm's figures come from its own model's
attempts), not that a random tiny model got better: it does not (shared/notes/dpo-on-cpu.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.jobs import JobRequest, create_job_from_folder, run_job_locally
from app.pdf import samples
from app.report.load import load_job_rows
from app.settings import PlanStep, Settings, VlmEndpoint
from app.train.dpo import ExportOptions, export_preferences
from tests.test_train_dpo import train_extra_or_skip
from tests.vllm_cpu.profiles import TINY_PROFILE, TINY_PROFILES
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint, VllmServer, default_model_dir

TUNED_NAME = f"{SERVED_MODEL_NAME}-tuned"
PAGES = 10
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
        *("--max-steps", "24", "--batch-size", "4", "--learning-rate", "5e-4"),
        *("--held-out", "0.2", "--device", "cpu"),
    ]
    # One thread: on a busy 2-core machine a second torch thread only spins.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.vllm
@pytest.mark.slow
def test_export_train_serve_and_compare(vllm_endpoint: VllmEndpoint, tmp_path: Path) -> None:
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

    ingested = create_job_from_folder(settings, db, JobRequest(folder, None, "ladder"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    summary = export_preferences(
        settings, db, [ingested.job_id], tmp_path / "pairs", ExportOptions()
    )
    assert summary.pairs == PAGES, summary.skipped
    phases.mark("job + export")

    tuned = tmp_path / "tuned"
    train(tmp_path / "pairs", tuned)
    phases.mark("train-dpo")
    card = json.loads((tuned / "training_card.json").read_text())
    held = json.loads((tuned / "held_out_pages.json").read_text())
    assert card["steps"] == 24 and card["pairs"]["train"] == PAGES - len(held) and len(held) == 2

    with VllmServer(tuned, extra_args=["--served-model-name", TUNED_NAME]) as server:
        phases.mark("tuned server start")
        endpoints = {"primary": base, "tuned": endpoint(server.base_url, TUNED_NAME)}
        tokens_before = server.generation_tokens_total()
        env = {
            "FOLIO_DATABASE_URL": db_url,
            "FOLIO_ENGINE": "ladder",
            "FOLIO_PLANS": json.dumps({"ladder": [s.model_dump() for s in LADDER]}),
            "FOLIO_VLM_ENDPOINTS": json.dumps({k: v.model_dump() for k, v in endpoints.items()}),
            "FOLIO_PROFILES": json.dumps({k: p.model_dump() for k, p in TINY_PROFILES.items()}),
        }
        args = ["eval", str(folder), "-a", "base=ladder@primary", "-a", "tuned=ladder@tuned"]
        args += ["--pages", str(tuned / "held_out_pages.json"), "--out", str(tmp_path / "eval")]
        result = CliRunner(env=env).invoke(app, args)
        assert result.exit_code == 0, result.output
        tuned_server_tokens = server.generation_tokens_total() - tokens_before
        phases.mark("eval")
    print(phases)  # seconds per phase, shown with -s or on failure
    print("loss", [round(r["loss"], 4) for r in card["curves"][:: len(card["curves"]) // 4 or 1]])
    evaluation = json.loads((tmp_path / "eval" / "eval.json").read_text())
    arms = {arm["label"]: arm for arm in evaluation["arms"]}
    for arm in evaluation["arms"]:  # the demo's figures, for docs/training.md
        keys = ("label", "attempts", "degeneration_rate_first_attempt", "degeneration_rate_final")
        keys += ("pages_recovered", "recovered_by", "tokens_per_page", "engine_seconds_per_page")
        steps = [
            (a.step_name, a.status, a.completion_tokens)
            for a in load_job_rows(db, arm["job_id"]).attempts
        ]
        print({k: arm[k] for k in keys}, steps)

    held_pages = sorted((entry["document"], entry["page"]) for entry in held)
    for label, model in (("base", SERVED_MODEL_NAME), ("tuned", TUNED_NAME)):
        arm = arms[label]
        assert sorted((s["document"], s["page"]) for s in arm["page_scores"]) == held_pages
        rows = load_job_rows(db, arm["job_id"])
        vlm = [a for a in rows.attempts if a.engine == "vlm"]
        assert vlm and {a.model for a in vlm} == {model}, "each arm's attempts hit its own model"
        assert arm["tokens_generated"] == sum(a.completion_tokens or 0 for a in rows.attempts)
        assert arm["attempts"] == len(rows.attempts)
        firsts = [
            min((a for a in rows.attempts if a.page_id == p.id), key=lambda a: a.id)
            for p in rows.pages
        ]
        first_rate = sum(a.status == "degenerate" for a in firsts) / len(firsts)
        assert arm["degeneration_rate_first_attempt"] == pytest.approx(first_rate)
        assert arm["pages"] == len(held) and arm["tokens_per_page"] == pytest.approx(
            arm["tokens_generated"] / len(held), abs=1e-3
        )
    # The tuned arm's tokens were generated by the tuned server, not by the base one.
    tuned_vlm_tokens = sum(
        a.completion_tokens or 0
        for a in load_job_rows(db, arms["tuned"]["job_id"]).attempts
        if a.engine == "vlm"
    )
    assert tuned_server_tokens >= tuned_vlm_tokens > 0
    assert arms["base"]["degeneration_rate_first_attempt"] == 1.0, "greedy on the base loops"
