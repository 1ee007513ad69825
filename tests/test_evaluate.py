"""`folio eval` on real PDFs and real engines (text layer, Tesseract): each arm is its own job
on the same pages, scored against ground truth where it exists, else against the text layer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.errors import ConfigError
from app.evaluate.arms import parse_arm, settings_with_arms
from app.evaluate.quality import cer, find_truth
from app.pdf import samples
from app.report.load import load_job_rows
from app.settings import Settings


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    texts = [samples.page_text(n, paragraphs=1) for n in (1, 2)]
    (folder / "digital.pdf").write_bytes(samples.born_digital_pdf(texts))
    (folder / "scan.pdf").write_bytes(samples.scanned_pdf([samples.page_text(3, paragraphs=1)]))
    truth = tmp_path / "truth"
    truth.mkdir()
    (truth / "scan.md").write_text(samples.page_text(3, paragraphs=1))
    (truth / "digital.p2.txt").write_text(texts[1])
    return folder


def run_eval(tmp_path: Path, db_url: str, *args: str) -> tuple[int, str]:
    env = {"FOLIO_DATABASE_URL": db_url}
    result = CliRunner(env=env).invoke(app, ["eval", *args, "--out", str(tmp_path / "eval")])
    return result.exit_code, result.output


def test_arms_side_by_side_with_quality_and_degeneration(
    corpus: Path, tmp_path: Path, sqlite_url: str
) -> None:
    truth = str(tmp_path / "truth")
    code, output = run_eval(
        tmp_path,
        sqlite_url,
        str(corpus),
        "-a",
        "layer=auto",
        "-a",
        "ocr=tesseract",
        "--truth",
        truth,
    )
    assert code == 0, output
    data = json.loads((tmp_path / "eval" / "eval.json").read_text())
    layer, ocr = data["arms"]
    assert [layer["label"], ocr["label"]] == ["layer", "ocr"]
    assert layer["job_id"] != ocr["job_id"] and layer["pages"] == ocr["pages"] == 3
    assert [m.split("-")[0] for m in ocr["models"]] == ["tesseract"] and ocr["attempts"] == 3
    for arm in (layer, ocr):
        assert arm["degeneration_rate_first_attempt"] == 0.0
        assert arm["pages_with_truth"] == 2 and arm["pages_with_textlayer"] == 1
        scored = {(s["document"], s["page"]): s for s in arm["page_scores"]}
        assert scored[("digital", 1)]["reference"] == "textlayer"
        assert scored[("scan", 1)]["reference"] == "truth"
    # The born-digital page read from its own text layer matches its truth nearly exactly.
    layer_scores = {(s["document"], s["page"]): s for s in layer["page_scores"]}
    assert layer_scores[("digital", 2)]["cer"] < 0.02
    assert ocr["cer"] is not None and ocr["word_f1"] > 0.5
    rows = load_job_rows(Database(sqlite_url), ocr["job_id"])
    assert sum(a.duration_s for a in rows.attempts) == pytest.approx(
        ocr["engine_seconds"], abs=1e-3
    )
    html = (tmp_path / "eval" / "eval.html").read_text()
    assert html.count("<svg") == 3 and "degenerate 1st" in html


def test_only_the_listed_pages_are_evaluated(corpus: Path, tmp_path: Path, sqlite_url: str) -> None:
    listed = tmp_path / "held_out_pages.json"
    listed.write_text(json.dumps([{"document": "digital", "page": 2}]))
    code, output = run_eval(
        tmp_path, sqlite_url, str(corpus), "-a", "layer=textlayer", "--pages", str(listed)
    )
    assert code == 0, output
    (arm,) = json.loads((tmp_path / "eval" / "eval.json").read_text())["arms"]
    assert arm["pages"] == 1
    assert [(s["document"], s["page"]) for s in arm["page_scores"]] == [("digital", 2)]
    assert arm["textlayer_f1"] == 1.0


def test_bad_arms_and_pages_are_clear_errors(corpus: Path, tmp_path: Path, sqlite_url: str) -> None:
    code, output = run_eval(tmp_path, sqlite_url, str(corpus), "-a", "x=nosuchplan")
    assert code == 5 and "unknown plan 'nosuchplan'" in output
    listed = tmp_path / "pages.json"
    listed.write_text(json.dumps([{"document": "missing", "page": 1}]))
    code, output = run_eval(tmp_path, sqlite_url, str(corpus), "-a", "auto", "--pages", str(listed))
    assert code == 5 and "'missing' page 1, not found" in output


def test_an_arm_points_every_vlm_step_at_its_endpoint() -> None:
    settings = Settings(
        vlm_endpoints={
            "primary": {"base_url": "http://a/v1", "model": "base"},
            "fallback": {"base_url": "http://b/v1", "model": "other"},
            "tuned": {"base_url": "http://c/v1", "model": "tuned"},
        }
    )
    arm = parse_arm("t=vlm@tuned")
    plan = settings_with_arms(settings, [arm]).plan(arm.plan_key)
    assert {s.endpoint for s in plan if s.engine == "vlm"} == {"tuned"}
    assert [s.name for s in plan] == [s.name for s in settings.plan("vlm")]
    with pytest.raises(ConfigError, match="unknown endpoint"):
        settings_with_arms(settings, [parse_arm("vlm@nowhere")])
    with pytest.raises(ConfigError, match="distinct labels"):
        settings_with_arms(settings, [parse_arm("a=vlm"), parse_arm("a=auto")])


def test_cer_counts_edits_per_reference_character() -> None:
    assert cer("hello world", "hello world") == 0.0
    assert cer("hallo  world", "hello world") == pytest.approx(1 / 11)


def test_whole_document_truth_counts_only_for_one_page_documents(tmp_path: Path) -> None:
    (tmp_path / "memo.md").write_text("whole")
    (tmp_path / "paper.docling_v2_groundtruth.md").write_text("gt")
    (tmp_path / "memo.p2.txt").write_text("page two")
    assert find_truth(tmp_path, "memo", 1, pages=1) == "whole"
    assert find_truth(tmp_path, "memo", 1, pages=3) is None
    assert find_truth(tmp_path, "memo", 2, pages=3) == "page two"
    assert find_truth(tmp_path, "paper", 1, pages=1) == "gt"


def test_a_failed_page_scores_as_an_empty_answer(
    corpus: Path, tmp_path: Path, sqlite_url: str
) -> None:
    dead = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "transport_retry_s": 0.2}
    step = {"name": "only", "engine": "vlm", "endpoint": "dead"}
    env = {
        "FOLIO_DATABASE_URL": sqlite_url,
        "FOLIO_VLM_ENDPOINTS": json.dumps({"dead": dead}),
        "FOLIO_PLANS": json.dumps({"dead-only": [step]}),
        "FOLIO_ENGINE": "dead-only",
    }
    args = ["eval", str(corpus), "-a", "dead-only", "--truth", str(tmp_path / "truth")]
    result = CliRunner(env=env).invoke(app, [*args, "--out", str(tmp_path / "eval")])
    assert result.exit_code == 0, result.output
    (arm,) = json.loads((tmp_path / "eval" / "eval.json").read_text())["arms"]
    assert arm["pages_failed"] == 3
    assert arm["cer"] == 1.0 and arm["word_f1"] == 0.0 and arm["textlayer_f1"] == 0.0


STOPPED_RUN = """
import os, sys
from pathlib import Path
from app.db.engine import Database
from app.evaluate.arms import parse_arm
from app.evaluate.run import EvalRequest, evaluate
from app.settings import Settings

corpus, work, url = sys.argv[1:4]
arms = [parse_arm("layer=textlayer"), parse_arm("ocr=tesseract")]
told = []
def stop_in_ocr(page_id, status):
    if told[-1] == "ocr":
        os._exit(9)  # as a killed process: no clean-up, a page in flight left open
request = EvalRequest(Path(corpus), arms, Path(work))
evaluate(Settings(database_url=url, concurrency=1), Database(url), request,
         lambda a, n: told.append(a.label), stop_in_ocr)
"""


def test_a_stopped_evaluation_resumes_where_it_stopped(
    corpus: Path, tmp_path: Path, sqlite_url: str
) -> None:
    """Killed after the first page of its second arm, the same evaluation again keeps the
    first arm's job and that page, and reads only the pages left."""
    import subprocess
    import sys

    from app.evaluate.run import EvalRequest, evaluate

    work = tmp_path / "eval"
    stopped = subprocess.run(
        [sys.executable, "-c", STOPPED_RUN, str(corpus), str(work), sqlite_url], timeout=300
    )
    assert stopped.returncode == 9
    stored = json.loads((work / "eval_jobs.json").read_text())["arms"]
    assert set(stored) == {"layer", "ocr"}
    settings = Settings(database_url=sqlite_url, concurrency=1)
    arms = [parse_arm("layer=textlayer"), parse_arm("ocr=tesseract")]
    told: list[tuple[str, int]] = []
    again = evaluate(
        settings,
        Database(sqlite_url),
        EvalRequest(corpus, arms, work),
        lambda a, n: told.append((a.label, n)),
    )
    assert told == [("layer", 0), ("ocr", 2)]
    layer, ocr = again.arms
    assert [layer.job_id, ocr.job_id] == [stored["layer"]["job_id"], stored["ocr"]["job_id"]]
    assert layer.pages == ocr.pages == 3 and ocr.pages_failed == 0
    rows = load_job_rows(Database(sqlite_url), ocr.job_id)
    first = min(rows.pages, key=lambda p: p.id)
    assert sum(a.page_id == first.id for a in rows.attempts) == 1, "a finished page is kept"


def test_a_resumed_evaluation_takes_back_the_pages_a_killed_run_held(
    corpus: Path, tmp_path: Path, sqlite_url: str
) -> None:
    """A killed evaluation leaves the pages it had in flight leased to its dead process, the
    lease minutes from expiring: the same evaluation again frees them, as `folio run` does,
    and reads them, so every page of the arm ends terminal (before, the rerun left them to
    the dead owner and reported the arm with those pages open)."""
    import socket
    import subprocess
    import sys

    from app.evaluate.run import EvalRequest, evaluate

    work = tmp_path / "eval"
    settings = Settings(database_url=sqlite_url, concurrency=1)
    db = Database(sqlite_url)
    arms = [parse_arm("layer=textlayer")]
    first = evaluate(settings, db, EvalRequest(corpus, arms, work), lambda a, n: None)
    (arm,) = first.arms
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    owner = f"{socket.gethostname()}:{gone.stdout.strip()}"
    lease_first_page(db, arm.job_id, owner)  # the killed run's page in flight, no answer
    told: list[tuple[str, int]] = []
    again = evaluate(settings, db, EvalRequest(corpus, arms, work),
                     lambda a, n: told.append((a.label, n)))  # fmt: skip
    assert told == [("layer", 1)]
    rows = load_job_rows(db, arm.job_id)
    assert {p.status for p in rows.pages} <= {"succeeded", "fallback", "failed"}
    assert again.arms[0].pages == 3


def test_another_evaluation_into_the_same_folder_is_refused(
    corpus: Path, tmp_path: Path, sqlite_url: str
) -> None:
    code, output = run_eval(tmp_path, sqlite_url, str(corpus), "-a", "layer=textlayer")
    assert code == 0, output
    listed = tmp_path / "held_out_pages.json"
    listed.write_text(json.dumps([{"document": "digital", "page": 2}]))
    code, output = run_eval(
        tmp_path, sqlite_url, str(corpus), "-a", "layer=textlayer", "--pages", str(listed)
    )
    assert code == 5 and "holds the jobs of another evaluation" in output


def test_an_evaluation_beside_a_run_still_reading_its_pages_is_refused(
    corpus: Path, tmp_path: Path, sqlite_url: str
) -> None:
    """A run told to stop may still be reading (SIGTERM lands between pages): the same
    evaluation again must not report the pages it holds with no answer, so it stops with
    who holds them (before, it read the rest and reported the arm with those pages open)."""
    import os
    import socket

    from app.errors import ConfigError
    from app.evaluate.run import EvalRequest, evaluate

    work = tmp_path / "eval"
    settings = Settings(database_url=sqlite_url, concurrency=1)
    db = Database(sqlite_url)
    arms = [parse_arm("layer=textlayer")]
    (arm,) = evaluate(settings, db, EvalRequest(corpus, arms, work), lambda a, n: None).arms
    owner = f"{socket.gethostname()}:{os.getppid()}"  # a live process, not this one
    lease_first_page(db, arm.job_id, owner)
    with pytest.raises(ConfigError, match=owner):
        evaluate(settings, db, EvalRequest(corpus, arms, work), lambda a, n: None)


def lease_first_page(db: Database, job_id: str, owner: str) -> None:
    """The job's first page back in flight: running, leased to `owner`, with no answer."""
    from app.db import page_path
    from app.db.models import Page

    with db.session() as session:
        held = session.query(Page).filter(Page.job_id == job_id).order_by(Page.id).first()
        assert held is not None
        held.status, held.text = "pending", None
        session.flush()
        claimed = page_path.claim(session.connection(), held.id, owner, lease_s=600)
        assert isinstance(claimed, page_path.ClaimedPage)
