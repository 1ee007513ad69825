"""`bench scale`'s arms choose Folio's loop stop through its settings alone
(`bench.scale.deployment.arm_settings`, what each arm's GPU workers read): here each arm's
settings, read as a worker reads them, run Folio's real VLM engine over HTTP against a loop
that never ends (the stand-in for vLLM in its scripted mode). An arm that claims Folio's stop
must cut the stream; an arm that claims to leave it out must let it run to the cap, or the
benchmark measures the stop it says it leaves out."""

from __future__ import annotations

import ast
import os

import pytest
from PIL import Image

from app.domain import PageInput
from app.engines.registry import EngineSet
from app.pipeline.page_attempts import past_attempt, resumed_page
from app.settings import Settings
from bench.scale import stage_worker
from bench.scale.deployment import Setup, arm_settings
from bench.scale.run import ARMS, RESUMING, tax_arms
from bench.vllm_standin.scripted import ScriptedAnswer, serving
from tests.distributed_support import ROOT

# tokens: ~100 copies of the row, far past where Folio's detector calls the loop and the
# stream it lets run while the blank page's scan is read at the verdict (issue 65's hold,
# detector_grounding_read_hold_chars: 384 characters, ~8 rows): ~350 tokens in all
CAP = 1200
LOOP = ScriptedAnswer(
    "---\nprimary_language: en\nis_rotation_valid: true\n---\nStatement of account\n\n",
    loop="| 2024-03-01 | Transfer to savings | 100.00 |\n",
)


@pytest.mark.parametrize("key", list(ARMS))
def test_each_arm_measures_the_stop_it_claims(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    arm = tax_arms(0.1, (key,), (1.0,))[0]
    _, client_stop, server_stop = ARMS[key]
    with serving(lambda body: LOOP) as server:
        for name in [n for n in os.environ if n.startswith("FOLIO_")]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("FOLIO_CONFIG", str(ROOT / "absent-folio.toml"))
        for name, value in arm_settings(arm, Setup(1, max_tokens=CAP), server.base_url).items():
            monkeypatch.setenv(name, value)
        settings = Settings()
        step = settings.plans["vlm"][0]
        engines = EngineSet(settings)
        try:
            page = PageInput(Image.new("RGB", (600, 800), "white"), "", False)
            result = engines.for_step(step).transcribe(page, step)
        finally:
            engines.close()
    request = server.requests[-1]  # the page's (a probe may come first)
    assert ("repetition_detection" in request) == bool(server_stop)
    resuming = [s.name for s in settings.plans["vlm"] if s.resume_after_loop]
    assert resuming == (["t0.1", "t0.2", "t0.5", "fallback-model"] if key in RESUMING else [])
    if client_stop:  # Folio's detector called the loop and closed the stream
        # what the client read before its close: the scripted server writes without a pace,
        # so on a loaded machine it may have written the cap into the socket before the close
        # reaches it, and its own record of the request's end is no test of the client's stop
        assert result.aborted and result.completion_tokens is not None
        assert result.completion_tokens < CAP / 2
    else:  # nothing of Folio's cut it: it ran to the cap
        assert not result.aborted and result.finish_reason == "length"
        assert result.completion_tokens == CAP and request["tokens"] == CAP


def test_the_resuming_arm_continues_the_cut_attempts_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`folio_resume`'s settings, as its GPU workers read them: after the first rung is cut at
    its loop, the next rung sends the text before the loop as the assistant's turn to continue
    (vLLM's continue_final_message), and only the continuation is generated; the rest of
    Folio's plan, and its stop, are the default's."""
    (arm,) = tax_arms(0.1, ("folio_resume",), (1.0,))
    (default,) = tax_arms(0.1, ("folio",), (1.0,))
    with serving(lambda body: LOOP) as server:
        for name in [n for n in os.environ if n.startswith("FOLIO_")]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("FOLIO_CONFIG", str(ROOT / "absent-folio.toml"))
        plain = arm_settings(default, Setup(1, max_tokens=CAP), server.base_url)
        resuming = arm_settings(arm, Setup(1, max_tokens=CAP), server.base_url)
        for name, value in resuming.items():
            monkeypatch.setenv(name, value)
        settings = Settings()
        first, retry = settings.plans["vlm"][:2]
        engines = EngineSet(settings)
        try:
            page = PageInput(Image.new("RGB", (600, 800), "white"), "", False)
            cut = engines.for_step(first).transcribe(page, first)
            asked = resumed_page(page, [past_attempt(0, cut)], retry)
            engines.for_step(retry).transcribe(asked, retry)
        finally:
            engines.close()
    assert cut.aborted and asked.resume_from and len(asked.resume_from) > len(LOOP.text) / 2
    assert (LOOP.text + LOOP.loop * 50).startswith(asked.resume_from)
    first_request, request = server.requests[-2:]
    assert "continue_final_message" not in first_request
    assert request["continue_final_message"] is True and request["add_generation_prompt"] is False
    assert {k: v for k, v in resuming.items() if k != "FOLIO_PLANS"} == plain
    names = [s.name for s in settings.plans["vlm"]]
    assert names == ["t0.1", "t0.2", "t0.5", "fallback-model", "textlayer", "tesseract"]


def test_bench_scale_sets_no_private_name_and_no_name_of_folios() -> None:
    """The arms differ by settings, the stage worker times Folio through public names only:
    no assignment in bench/scale to a private attribute from outside its object or to any
    attribute of a module of `app`; its one setattr (`wrap`) refuses private names."""
    found = []
    for path in sorted((ROOT / "bench" / "scale").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        folio = {
            alias.asname or alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
            if (getattr(node, "module", None) or alias.name).startswith("app")
        }
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if not isinstance(target, ast.Attribute):
                    continue
                base = target.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                owner = getattr(base, "id", "")
                if owner in folio or (target.attr.startswith("_") and owner != "self"):
                    found.append(f"{path.name}:{node.lineno} {ast.unparse(target)}")
    assert not found, found
    import app.pdf.render as render

    with pytest.raises(RuntimeError, match="no public function"):
        stage_worker.wrap(render, "_pixels", stage_worker.stage("render"))
