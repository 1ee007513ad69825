"""A false alarm keeps its page's answer through the real vLLM CPU server (issue 39).

The scripted-decoding processor writes the passport page's healthy answer (its `<` fill trips
`char_run` with char_run_min and mrz_fill_run_min 12 set explicitly: the detector as it was
when issue 39 found this false alarm) for every read: the first two attempts are cut by Folio's
detector closing the stream (the engine plugin and `repetition_detection` are off: they keep
their own thresholds), and the confirming attempt, whose stop lets the confirmed unit run to
its bound (the scanned page has no text layer to count it: 6x the copies at the cut), writes
the whole answer to its EOS. A real loop written the same way on every read is cut past that
bound in the confirming attempt, whether it would run to the cap or end before it (issues 50
and 51), and the page ends degenerate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from sqlalchemy import select

from app.db.engine import Database
from app.db.models import Attempt
from app.degeneration import DetectorConfig, LoopDetector
from app.domain import PageInput
from app.engines.registry import EngineSet
from app.engines.vlm_stops import EndpointStops
from app.jobs import JobRequest, create_job, run_job_locally
from app.jobs.results import load_results
from app.pdf import samples
from app.settings import PlanStep, Settings, VlmEndpoint
from bench.false_alarms.pages import LEDGER, PASSPORT
from bench.scripted import ScriptedVlmEngine, require_scripted_server, with_script
from tests.vllm_cpu.server import VllmEndpoint

pytestmark = pytest.mark.vllm

CAP = 900  # the tiny server's context is 2,048 tokens; the passport is about 500
STEPS = [
    PlanStep(name=name, engine="vlm", endpoint="primary", temperature=t, max_tokens=CAP)
    for name, t in (("t0.1", 0.1), ("t0.2", 0.2), ("t0.5", 0.5))
]


class Replaying(ScriptedVlmEngine):
    """The real engine; every request asks the scripted server for `script`."""

    script: ClassVar[str] = ""

    def request_body(
        self, page: PageInput, step: PlanStep, stops: EndpointStops | None = None
    ) -> dict[str, Any]:
        return with_script(super().request_body(page, step, stops), self.script)


class ReplayingEngines(EngineSet):
    def _build_vlm(self, step: PlanStep) -> Replaying:
        endpoint = self.settings.vlm_endpoints["primary"]
        profile = self.settings.profile_of("primary")
        config = DetectorConfig(**(profile.detector | self.settings.detector))  # as EngineSet
        return Replaying("primary", endpoint, lambda: LoopDetector(config), profile)


def run_replayed(
    server: VllmEndpoint, db_url: str, tmp_path: Path, script: str, mp: pytest.MonkeyPatch
) -> tuple[list[Attempt], Any]:
    require_scripted_server(server.base_url, server.model)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "scan.pdf").write_bytes(samples.scanned_pdf([samples.page_text(1)]))
    endpoint = VlmEndpoint(
        base_url=server.base_url,
        model=server.model,
        profile="markdown",
        max_image_side=256,
        # server-side stops keep their own thresholds; the test sets the client detector's
        engine_plugin="off",
        server_repetition_detection="off",
    )
    settings = Settings(
        database_url=db_url,
        engine="ladder",
        plans={"ladder": STEPS},
        vlm_endpoints={"primary": endpoint},
        detector={"char_run_min": 12, "mrz_fill_run_min": 12},
        vlm_concurrency=1,
    )
    Replaying.script = script
    mp.setattr("app.jobs.EngineSet", ReplayingEngines, raising=False)
    db = Database(db_url)
    ingested = create_job(settings, db, JobRequest(tmp_path / "in", None, "ladder"))
    run_job_locally(settings, db, ingested.job_id, ingested.page_ids)
    with db.session() as session:
        attempts = list(session.scalars(select(Attempt).order_by(Attempt.id)))
    return attempts, load_results(db, ingested.job_id).documents[0].pages[0]


def test_the_passport_keeps_its_answer(
    vllm_endpoint: VllmEndpoint, sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts, page = run_replayed(vllm_endpoint, sqlite_url, tmp_path, PASSPORT, monkeypatch)
    assert [(a.step_name, a.status, a.role) for a in attempts] == [
        ("t0.1", "false_alarm", None),
        ("t0.2", "false_alarm", None),
        ("t0.2", "ok", "confirm"),
    ]
    assert [a.verdict_kind for a in attempts[:2]] == ["char_run"] * 2
    confirming = attempts[2]
    assert confirming.finish_reason == "stop" and (confirming.completion_tokens or CAP) < CAP
    assert (page.status, page.engine) == ("fallback", "vlm")
    assert (page.text or "").strip() == PASSPORT.strip()


@pytest.mark.parametrize("rows", [60, 30], ids=["past-the-cap", "ends-before-the-cap"])
def test_a_real_loop_replayed_on_every_read_ends_degenerate(
    vllm_endpoint: VllmEndpoint,
    sqlite_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rows: int,
) -> None:
    """60 rows run past the cap; 30 end (EOS) well before it: a loop that ends is still one."""
    looping = LEDGER.text + LEDGER.loop * rows
    attempts, page = run_replayed(vllm_endpoint, sqlite_url, tmp_path, looping, monkeypatch)
    assert [(a.status, a.role) for a in attempts] == [
        ("degenerate", None),
        ("degenerate", None),
        ("degenerate", "confirm"),
    ]
    confirming = attempts[2]
    bound = confirming.params["confirm_bound"]
    assert bound == 6 * confirming.params["confirm_copies_at_cut"] < rows
    # cut past its bound, within the detector's own wait, far under the cap
    assert confirming.aborted and confirming.finish_reason == "abort"
    assert bound < confirming.output.count(LEDGER.loop.strip()) <= bound + 4
    assert (confirming.completion_tokens or CAP) < CAP
    assert (page.status, page.outcome, page.text) == ("failed", "degenerate", None)
