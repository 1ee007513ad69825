"""DPO pairs from a job that ran through the real vLLM CPU server: greedy loops are rejected,
penalised retries are chosen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.degeneration import score_output
from app.jobs import JobRequest, create_job, run_job_locally
from app.pdf import samples
from app.settings import PlanStep, Settings, VlmEndpoint
from app.train.dpo import ExportOptions, export_preferences, truncate_rejected
from tests.vllm_cpu.profiles import TINY_PROFILE, TINY_PROFILES
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint

GREEDY = PlanStep(name="greedy", engine="vlm", endpoint="primary", temperature=0.0, max_tokens=800)
PENALIZED = PlanStep(
    name="penalized",
    engine="vlm",
    endpoint="primary",
    temperature=0.8,
    repetition_penalty=1.3,
    seed=11,
    max_tokens=100,
)


def settings_for(url: str, db_url: str) -> Settings:
    # The client's own stop: the tiny model's byte tokens decode to a few characters on the
    # client when the engine plugin has already seen a loop in its own decoding, and the
    # rejected side must hold enough of the loop to be one by the offline definition.
    endpoint = VlmEndpoint(
        base_url=url,
        model=SERVED_MODEL_NAME,
        transport_retry_s=5,
        engine_plugin=False,
        abort_call=False,
        server_repetition_detection=False,
        profile=TINY_PROFILE.id,
    )
    return Settings(
        database_url=db_url,
        engine="ladder",
        plans={"ladder": [GREEDY, PENALIZED, PlanStep(name="tesseract", engine="tesseract")]},
        vlm_endpoints={"primary": endpoint},
        vlm_concurrency=4,
        profiles=TINY_PROFILES,
    )


@pytest.fixture(scope="module")
def vlm_job(
    vllm_endpoint: VllmEndpoint, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Settings, str]:
    folder = tmp_path_factory.mktemp("in")
    (folder / "scan.pdf").write_bytes(samples.scanned_pdf([samples.page_text(n) for n in (1, 2)]))
    (folder / "again.pdf").write_bytes(samples.scanned_pdf([samples.page_text(3)]))
    db_url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'folio.db'}"
    settings = settings_for(vllm_endpoint.base_url, db_url)
    db = Database(db_url)
    ingested = create_job(settings, db, JobRequest(folder, None, "ladder"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    return settings, ingested.job_id


@pytest.mark.vllm
def test_export_loads_with_datasets(vlm_job: tuple[Settings, str], tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    settings, job_id = vlm_job
    summary = export_preferences(
        settings, Database(settings.database_url), [job_id], tmp_path, ExportOptions()
    )
    assert summary.pairs == 3
    data = datasets.load_dataset("json", data_files=str(tmp_path / "train.jsonl"))["train"]
    assert {"images", "prompt", "chosen", "rejected", "metadata"} <= set(data.column_names)
    for row in data:
        image = tmp_path / row["images"][0]
        assert image.exists() and Image.open(image).size[0] > 0
        assert row["prompt"][0]["content"][0]["type"] == "image"
        rejected = row["rejected"][0]["content"][0]["text"]
        chosen = row["chosen"][0]["content"][0]["text"]
        assert score_output(rejected).degenerate, "a rejected text must be a real loop"
        assert not score_output(chosen, "length", 100, 100).degenerate
        assert row["metadata"]["chosen_by"] == "vlm:penalized"
        assert row["metadata"]["rejected_verdict"]["aborted"]


@pytest.mark.vllm
def test_non_vlm_answers_are_left_out_unless_asked(
    vlm_job: tuple[Settings, str], tmp_path: Path
) -> None:
    settings, job_id = vlm_job
    strict = ExportOptions(min_chosen_chars=10_000)
    summary = export_preferences(
        settings, Database(settings.database_url), [job_id], tmp_path, strict
    )
    assert summary.pairs == 0 and summary.skipped["chosen answer too short"] == 3


@pytest.mark.vllm
def test_cli_writes_the_same_pairs(
    vlm_job: tuple[Settings, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, job_id = vlm_job
    monkeypatch.setenv("FOLIO_DATABASE_URL", settings.database_url)
    endpoint = settings.vlm_endpoints["primary"]
    monkeypatch.setenv("FOLIO_VLM_ENDPOINTS", json.dumps({"primary": endpoint.model_dump()}))
    profiles = {name: p.model_dump() for name, p in settings.profiles.items()}
    monkeypatch.setenv("FOLIO_PROFILES", json.dumps(profiles))
    result = CliRunner().invoke(app, ["export-dpo", job_id, job_id, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "train.jsonl").read_text().splitlines()
    assert len(lines) == 3, "the same job named twice gives each pair once"


@pytest.mark.vllm
def test_ground_truth_is_chosen_where_the_truth_folder_has_the_page(
    vlm_job: tuple[Settings, str], tmp_path: Path
) -> None:
    settings, job_id = vlm_job
    truth = tmp_path / "truth"
    truth.mkdir()
    (truth / "scan.p1.md").write_text("The first page, as typed.")
    (truth / "again.md").write_text("The one page of again.pdf.")
    out = tmp_path / "pairs"
    summary = export_preferences(
        settings, Database(settings.database_url), [job_id], out, ExportOptions(truth_dir=truth)
    )
    assert summary.pairs == 3
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    chosen = {
        (r["metadata"]["document"], r["metadata"]["page"]): (
            r["metadata"]["chosen_by"],
            r["chosen"][0]["content"][0]["text"],
        )
        for r in rows
    }
    assert chosen[("scan", 1)] == ("truth", "The first page, as typed.")
    assert chosen[("again", 1)] == ("truth", "The one page of again.pdf.")
    assert chosen[("scan", 2)][0] == "vlm:penalized", "no truth for page 2: the healthy retry"
    assert all(score_output(r["rejected"][0]["content"][0]["text"]).degenerate for r in rows)


def test_rejected_output_is_cut_a_few_periods_after_the_onset() -> None:
    looping = "Intro text. " + "abc " * 100
    assert truncate_rejected(looping, onset=12, period=4, periods=3) == "Intro text. abc abc abc "
    assert truncate_rejected(looping, onset=None, period=None, periods=3) == looping
    kept = truncate_rejected(looping, onset=12, period=4, periods=3, min_chars=40)
    assert kept == "Intro text. " + "abc " * 10


@pytest.mark.vllm
def test_pages_read_without_looping_are_exported_for_the_gate(
    vlm_job: tuple[Settings, str], tmp_path: Path
) -> None:
    """A job whose first (penalised) attempt is healthy: its page goes to healthy.jsonl with
    that answer, never to the pairs, and the gate reads it beside the held-out pairs."""
    from app.train.gate_pages import gate_pages

    settings, looping_job = vlm_job
    settings = settings.model_copy(update={"plans": {**settings.plans, "once": [PENALIZED]}})
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "clean.pdf").write_bytes(samples.scanned_pdf([samples.page_text(4)]))
    db = Database(settings.database_url)
    ingested = create_job(settings, db, JobRequest(folder, None, "once"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    out = tmp_path / "pairs"
    summary = export_preferences(settings, db, [looping_job, ingested.job_id], out, ExportOptions())
    assert summary.pairs == 3 and summary.healthy_pages == 1
    (record,) = [json.loads(line) for line in (out / "healthy.jsonl").read_text().splitlines()]
    with db.session() as session:
        attempt = repo_first_attempt(session, ingested.page_ids[0])
    assert attempt.status == "ok" and record["answer"] == attempt.output
    assert record["metadata"]["document"] == "clean" and (out / record["images"][0]).is_file()
    pages = gate_pages([out], held_out=[], trained=[], limit=10)
    assert [(p.origin, p.answer) for p in pages] == [("healthy", attempt.output)]


def repo_first_attempt(session: object, page_id: int) -> object:
    from sqlalchemy import select

    from app.db.models import Attempt

    return session.scalars(  # type: ignore[attr-defined]
        select(Attempt).where(Attempt.page_id == page_id).order_by(Attempt.id)
    ).first()
