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
from app.settings import Settings
from bench.scale import stage_worker
from bench.scale.deployment import Setup, arm_settings
from bench.scale.run import ARMS, tax_arms
from bench.vllm_standin.scripted import ScriptedAnswer, serving
from tests.distributed_support import ROOT

CAP = 600  # tokens: ~50 copies of the row, far past where Folio's detector calls the loop
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
    if client_stop:  # Folio's detector called the loop and closed the stream
        assert result.aborted and result.completion_tokens is not None
        assert result.completion_tokens < CAP / 2 and request["finish"] == "client_closed"
    else:  # nothing of Folio's cut it: it ran to the cap
        assert not result.aborted and result.finish_reason == "length"
        assert result.completion_tokens == CAP and request["tokens"] == CAP


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
