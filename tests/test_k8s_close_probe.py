"""The GPU pod's close-probe init container (deploy/k8s/base/gpu.yaml) on the real vLLM CPU
server: its own script, as rendered, exits 0 ("live") straight to the server, so the worker
starts, and 1 ("NOT live") through a proxy that holds the upstream stream open after its
client leaves, so the kubelet keeps the worker from starting.

The script runs in this process (exec of the rendered text, `sys.exit` caught) so the probe's
cap can be the least it accepts, as in tests/vllm_cpu/test_close_liveness.py: a close that is
NOT live runs the probe to its cap. Waits are on the server's counters, with caps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engines import vlm_close_probe
from app.engines.vlm_close_probe import CLOSE_SLACK
from tests.http_proxies import ProxyProcess
from tests.k8s_support import find, render
from tests.prometheus_stack import wait_idle
from tests.vllm_cpu.server import VllmEndpoint

pytestmark = pytest.mark.vllm


def close_probe_script() -> str:
    gpu = find(render(), "Deployment", "folio-gpu")
    [probe] = [
        c for c in gpu["spec"]["template"]["spec"]["initContainers"] if c["name"] == "close-probe"
    ]
    assert probe["command"] == ["python", "-c"]
    return str(probe["args"][0])


def run_init_container(
    script: str, server: VllmEndpoint, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> int:
    endpoint = {
        "base_url": base_url,
        "model": server.model,
        "metrics_url": f"{server.root_url}/metrics",
        "engine_plugin": False,
        "server_repetition_detection": False,
        "abort_call": False,
    }
    monkeypatch.setenv("FOLIO_VLM_ENDPOINTS", json.dumps({"primary": endpoint}))
    wait_idle(server)
    with pytest.raises(SystemExit) as exited:
        exec(compile(script, "close-probe", "exec"), {"__name__": "__main__"})
    return int(exited.value.code or 0)


@pytest.fixture(autouse=True)
def short_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vlm_close_probe, "PROBE_CAP", 4 * CLOSE_SLACK)


def test_the_init_container_passes_a_live_close_and_fails_a_held_one(
    vllm_endpoint: VllmEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = close_probe_script()
    direct = run_init_container(script, vllm_endpoint, f"{vllm_endpoint.root_url}/v1", monkeypatch)
    assert direct == 0, capsys.readouterr().out
    assert ": live (" in capsys.readouterr().out
    upstream = vllm_endpoint.root_url.removeprefix("http://")
    with ProxyProcess("hold", tmp_path, upstream=upstream) as holding:
        held = run_init_container(script, vllm_endpoint, f"{holding.url}/v1", monkeypatch)
    assert held == 1
    assert ": NOT live (" in capsys.readouterr().out
    wait_idle(vllm_endpoint)  # the held probe runs on to its cap: leave the server idle
