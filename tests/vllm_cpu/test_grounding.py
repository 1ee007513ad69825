"""Grounding and the user's thresholds end to end on the vLLM CPU server (issue 50).

The scripted server writes a page's answer token by token; Folio's engine streams it with the
loop stop the endpoint offers (the plugin inside the engine, live on the test server) and its
own client-side detector. A ledger whose rows differ only in their numbers is what the detector
alone cuts; the page's text layer holds those rows, so a grounded stream keeps the answer,
while a model writing one row past what the page holds is still cut, on the server.
"""

from __future__ import annotations

import pytest
from PIL import Image

from app.domain import AttemptStatus, EngineResult
from app.engines.registry import EngineSet
from app.settings import PlanStep, Settings, VlmEndpoint
from bench.scripted import ScriptedPage, ScriptedVlmEngine
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint
from tests.vllm_cpu.test_engine_stops import require_plugin

pytestmark = pytest.mark.vllm

CAP = 600  # tokens
ROWS = [f"| Lot {i} | Widget assembly | {12 + i}.50 |" for i in range(12)]
LAYER = "Inventory\n" + "\n".join(r.replace("|", " ").strip() for r in ROWS)
LEDGER = "# Inventory\n\n| Lot | Item | Price |\n|---|---|---|\n" + "\n".join(ROWS) + "\n"
# The model writes the fourth row again and again: past the page's twelve rows of its shape.
LOOPING = LEDGER.split("\n| Lot 3 ")[0] + "\n" + "\n".join([ROWS[3]] * 60)
STEP = PlanStep(name="healthy", engine="vlm", endpoint="primary", max_tokens=CAP)


def page(answer: str, layer: str = LAYER) -> ScriptedPage:
    image = Image.new("RGB", (400, 560), "white")
    return ScriptedPage(raster=image, text_layer=layer, text_layer_usable=True, healthy_text=answer)


def endpoint(server: VllmEndpoint) -> VlmEndpoint:
    # repetition_detection off: the ledger's rules are exact short token repeats it would stop
    return VlmEndpoint(
        base_url=server.base_url,
        model=SERVED_MODEL_NAME,
        max_image_side=560,
        server_repetition_detection=False,
    )


def transcribe(
    server: VllmEndpoint, answer: str, layer: str = LAYER, **settings: object
) -> EngineResult:
    """One attempt through the engine the worker builds from `settings` (its detector
    thresholds and grounding), asking the scripted server for `answer`."""
    built = EngineSet(Settings(vlm_endpoints={"primary": endpoint(server)}, **settings))
    made = built.for_step(STEP)
    engine = ScriptedVlmEngine(
        "primary",
        made.endpoint,  # type: ignore[attr-defined]
        made.detector_factory,  # type: ignore[attr-defined]
        made.profile,  # type: ignore[attr-defined]
        made.grounding_margin,  # type: ignore[attr-defined]
    )
    try:
        return engine.transcribe(page(answer, layer), STEP)
    finally:
        engine.close()
        built.close()


def test_a_ledger_the_page_holds_keeps_its_answer_only_when_grounded(
    vllm_endpoint: VllmEndpoint,
) -> None:
    require_plugin(vllm_endpoint)

    grounded = transcribe(vllm_endpoint, LEDGER)
    alone = transcribe(vllm_endpoint, LEDGER, detector_grounding=False)

    assert grounded.status is AttemptStatus.OK and grounded.finish_reason == "stop", grounded
    assert grounded.text.strip().endswith(ROWS[-1]), grounded.text
    assert grounded.params["grounding"]["overruled"], grounded.params
    assert "folio_page_text" not in grounded.params.get("vllm_xargs", {})
    assert alone.status is AttemptStatus.DEGENERATE, alone
    assert alone.stop_mechanism == "engine_plugin", alone


def test_a_row_written_past_what_the_page_holds_is_cut_on_the_server(
    vllm_endpoint: VllmEndpoint,
) -> None:
    require_plugin(vllm_endpoint)

    result = transcribe(vllm_endpoint, LOOPING)

    assert result.status is AttemptStatus.DEGENERATE, result
    assert result.stop_mechanism == "engine_plugin", result
    assert result.params["grounding"]["verdict"]["page"] == len(ROWS), result.params
    assert result.completion_tokens is not None and result.completion_tokens < CAP


def test_the_plugin_runs_the_users_thresholds(vllm_endpoint: VllmEndpoint) -> None:
    """A user who raises the row threshold keeps the ledger on the server too: were the plugin
    on its defaults, it would end the request early and the answer would come back cut."""
    require_plugin(vllm_endpoint)

    raised = transcribe(
        vllm_endpoint, LEDGER, detector_grounding=False, detector={"drift_row_min_repeats": 64}
    )

    assert raised.status is AttemptStatus.OK and raised.finish_reason == "stop", raised
    assert raised.text.strip().endswith(ROWS[-1]), raised.text


SITES = ["northern", "southern", "eastern", "western", "central"]
DRIFTING = (
    "Storage log\n\n"
    + "\n".join(f"- The samples from the {s} site were stored at four degrees." for s in SITES)
    + "\n\nSigned by the lab manager.\n"
)


def test_lines_that_differ_by_a_word_are_counted_alike_on_the_server(
    vllm_endpoint: VllmEndpoint,
) -> None:
    """Like with like (issue 65): the plugin counts the page's near copies by the detector's
    rule, as the client does, so the page's five drifting lines are not cut on the server,
    where the detector alone cuts them."""
    require_plugin(vllm_endpoint)

    grounded = transcribe(vllm_endpoint, DRIFTING, layer=DRIFTING)
    alone = transcribe(vllm_endpoint, DRIFTING, layer=DRIFTING, detector_grounding=False)

    assert grounded.status is AttemptStatus.OK and grounded.finish_reason == "stop", grounded
    assert grounded.params["grounding"]["overruled"], grounded.params
    assert alone.status is AttemptStatus.DEGENERATE, alone
    assert alone.stop_mechanism == "engine_plugin", alone
