"""Folio's vLLM plugin, its pure parts: behaviours, incremental detokenising, dependencies.

The processor itself (torch + vLLM) runs in tests/vllm_cpu/test_engine_stops.py on the real
server; here are the parts that decide what it does.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.degeneration import DetectorConfig
from app.vllm_plugin.actions import StepAction, combine
from app.vllm_plugin.behaviours import (
    DETECTOR_ARG,
    LOOP_STOP_ARG,
    STOP_AFTER_ARG,
    LoopStop,
    StopAfter,
    behaviours_for,
    detector_arg,
)
from app.vllm_plugin.deployment import PROCESSOR, check_deployment
from app.vllm_plugin.detokenize import IncrementalDetokenizer


class ByteTokenizer:
    """Token id = one UTF-8 byte (ids >= 256 are special tokens): multi-byte characters
    span several tokens, as with a real byte-level BPE."""

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        data = bytes(i for i in token_ids if i < 256)
        return data.decode("utf-8", errors="replace")


def ids_of(text: str) -> list[int]:
    return list(text.encode())


def test_detokenizer_returns_each_character_once_even_when_split_across_tokens() -> None:
    text = "Straße ✓ 表 ok\n" * 3
    ids: list[int] = []
    detok, pieces = IncrementalDetokenizer(ByteTokenizer()), []
    for token in [*ids_of(text), 300]:  # 300: a special token, skipped
        ids.append(token)
        pieces.append(detok.push(ids))

    assert "".join(pieces) == text
    assert "\ufffd" not in "".join(pieces)


def test_detokenizer_gives_up_holding_back_invalid_bytes() -> None:
    detok, ids, out = IncrementalDetokenizer(ByteTokenizer(), max_pending=3), [], ""
    for token in [0xE2] * 9:  # lead bytes that never complete a character
        ids.append(token)
        out += detok.push(ids)

    assert out.count("\ufffd") >= 6  # emitted, a few tokens late at most


def test_loop_stop_ends_a_request_once_its_text_loops_and_not_before() -> None:
    stop = LoopStop.from_args({LOOP_STOP_ARG: 1})
    assert stop is not None
    healthy = "Invoice 2024-117. Total due within thirty days of receipt.\n"
    assert stop.step([1], healthy) == StepAction()

    actions = [stop.step([1], "jum ") for _ in range(40)]

    assert actions[-1].end
    assert stop.verdict is not None and stop.verdict.period == 4
    first_end = next(i for i, a in enumerate(actions) if a.end)
    assert all(a.end for a in actions[first_end:])  # stays ended


@pytest.mark.parametrize(
    ("args", "asked"),
    [
        (None, False),
        ({}, False),
        ({"other": 1}, False),
        ({LOOP_STOP_ARG: 0}, False),
        ({LOOP_STOP_ARG: 1}, True),
        ({LOOP_STOP_ARG: "true"}, True),
    ],
)
def test_requests_get_the_behaviours_they_ask_for(args: dict | None, asked: bool) -> None:
    assert bool(behaviours_for(args)) is asked


def test_the_plugin_runs_the_thresholds_the_client_sends() -> None:
    """A user who raised a threshold (a healthy page was cut) gets it on the server too: the
    plugin's verdict is the client's, not the defaults'."""
    raised = DetectorConfig(char_run_min=64)
    assert detector_arg(DetectorConfig()) == {}  # the defaults send nothing
    default = LoopStop.from_args({LOOP_STOP_ARG: 1})
    user = LoopStop.from_args({LOOP_STOP_ARG: 1, **detector_arg(raised)})
    assert default is not None and user is not None

    run = "Total " + "!" * 40  # 40 marks: a loop by default, not under the user's 64
    assert default.step([1], run).end and not user.step([1], run).end
    assert user.step([1], "!" * 100).end  # 140 marks: a loop for both


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("not json", "JSON object"),
        ('["char_run_min"]', "JSON object"),
        ('{"no_such_threshold": 3}', "no detector threshold named no_such_threshold"),
        ('{"char_run_min": "64"}', "integers"),
    ],
)
def test_bad_detector_thresholds_are_refused(value: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        behaviours_for({LOOP_STOP_ARG: 1, DETECTOR_ARG: value})


def test_a_bad_arg_value_is_refused() -> None:
    with pytest.raises(ValueError, match=LOOP_STOP_ARG):
        behaviours_for({LOOP_STOP_ARG: "probe"})


def test_combined_actions_end_if_any_ends_and_ban_the_union() -> None:
    combined = combine(
        [StepAction(banned=frozenset({1})), StepAction(end=True, banned=frozenset({2}))]
    )
    assert combined == StepAction(end=True, banned=frozenset({1, 2}))


def test_plugin_pure_parts_import_nothing_of_folios_core_dependencies() -> None:
    """The plugin runs in vLLM's venv, where Folio is installed with --no-deps."""
    probe = (
        "import sys, app.vllm_plugin.behaviours, app.vllm_plugin.detokenize\n"
        "import app.vllm_plugin.deployment\n"
        "heavy = {'sqlalchemy', 'pydantic', 'pydantic_settings', 'httpx', 'typer', 'celery',"
        " 'redis', 'fastapi', 'PIL', 'fitz', 'pymupdf', 'torch', 'vllm', 'transformers'}\n"
        "loaded = sorted(heavy & {m.split('.')[0] for m in sys.modules})\n"
        "ours = sorted(m for m in sys.modules if m.startswith('app.')"
        " and not m.startswith(('app.vllm_plugin', 'app.degeneration')))\n"
        "print(loaded, ours)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[] []"


def test_the_liveness_probe_behaviour_ends_after_n_real_tokens_only() -> None:
    stop = StopAfter.from_args({STOP_AFTER_ARG: 3})
    assert stop is not None

    actions = [stop.step(ids, "") for ids in ([7], [], [8], [9], [10])]

    assert [a.end for a in actions] == [False, False, False, True, True]
    for bad in (0, 65, "3", True, 2.5):
        with pytest.raises(ValueError, match=STOP_AFTER_ARG):
            StopAfter.from_args({STOP_AFTER_ARG: bad})


def vllm_config(async_scheduling: bool, named: list | None = None, speculative: object = None):
    return SimpleNamespace(
        speculative_config=speculative,
        scheduler_config=SimpleNamespace(async_scheduling=async_scheduling),
        model_config=SimpleNamespace(logits_processors=named),
    )


@pytest.mark.parametrize(
    ("config", "refused"),
    [
        (vllm_config(False), None),  # the CPU server: no async scheduling
        (vllm_config(True, [PROCESSOR]), None),  # GPU, named with --logits-processors
        (vllm_config(True), "placeholder"),  # GPU, entry point only: blind
        (vllm_config(True, ["other.module:Processor"]), "placeholder"),
        (vllm_config(True, [PROCESSOR], speculative=object()), "speculative"),
    ],
)
def test_the_plugin_refuses_to_start_where_it_would_stop_nothing(
    config: SimpleNamespace, refused: str | None
) -> None:
    if refused is None:
        check_deployment(config)
    else:
        with pytest.raises(RuntimeError, match=refused):
            check_deployment(config)


def test_the_plugins_modules_import_one_another_without_a_cycle() -> None:
    import ast
    from graphlib import CycleError, TopologicalSorter

    folder = Path(__file__).resolve().parents[1] / "app" / "vllm_plugin"
    graph = {}
    for module in folder.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        graph[module.stem] = {
            node.module.rsplit(".", 1)[-1]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("app.vllm_plugin.")
        }
    assert graph["behaviours"] >= {"actions", "guard"}
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"import cycle in app/vllm_plugin: {exc.args[1]}") from exc
